import BLEHTTP
import BLESystems
import BLEVirtual
import Foundation
import XCTest

/// Every form of `ble ui` says `autocomplete="off"`: its buttons start disabled until the
/// page's script takes the form over, and a browser that restores form state on reload
/// (Firefox does, HTML §4.10.18.7.1) would otherwise bring them back enabled before the script.
final class UIFormsAutocompleteTests: XCTestCase {
    func testEveryFormTurnsAutocompleteOff() async throws {
        let pages = try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let echo = UIEchoApp(central: central, token: "t")
            let sample = UISampleApp(central: central, token: "t")
            let serve = UIServeApp(central: central, token: "t")
            func text(_ reply: UIReply?) -> String {
                guard case let .response(r)? = reply else { return "" }
                return String(decoding: r.body, as: UTF8.self)
            }
            func get(_ path: String) -> HTTPRequest { HTTPRequest(method: "GET", target: path) }
            let pages = ["/echo": text(await echo.handle(get("/echo"))), "/sample": text(sample.handle(get("/sample"))),
                         "/serve": text(await serve.handle(get("/serve")))]
            echo.stop()
            sample.stop()
            await serve.stop()
            await central.close()
            return pages
        }
        var forms = 0
        for (path, page) in pages {
            XCTAssertTrue(page.contains("<form"), "\(path) has a form")
            for tag in page.components(separatedBy: "<form").dropFirst() {
                forms += 1
                let open = tag.prefix { $0 != ">" }
                XCTAssertTrue(open.contains("autocomplete=\"off\""), "\(path): <form\(open)>")
            }
        }
        XCTAssertEqual(forms, 4)
    }
}
