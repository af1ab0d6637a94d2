import BLEHTTP
import BLESystems
import BLEVirtual
import Foundation
import XCTest

/// `ble ui`'s stylesheet on a narrow screen: a column it drops is dropped as a whole, header
/// and cells alike, by the class both carry; no rule hides a column by its position, which
/// would hit the last column of every table (the accelerometer list's, the /serve centrals').
final class UIStylesheetTests: XCTestCase {
    /// The stylesheet and the pages with tables, as the apps serve them.
    func served() async throws -> (css: String, pages: [String: String]) {
        try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let devices = UIDevicesApp(central: central, token: "t")
            let heartRate = UIHeartRateApp(central: central, token: "t")
            let accel = UIAccelApp(central: central, token: "t", devices: devices)
            let serve = UIServeApp(central: central, token: "t")
            func text(_ reply: UIReply?) -> String {
                guard case let .response(r)? = reply else { return "" }
                return String(decoding: r.body, as: UTF8.self)
            }
            func get(_ path: String) -> HTTPRequest { HTTPRequest(method: "GET", target: path) }
            let css = text(devices.handle(get("/static/ui.css")))
            let pages = ["/devices": text(devices.handle(get("/devices"))), "/heart-rate": text(heartRate.handle(get("/heart-rate"))),
                         "/accel": text(accel.handle(get("/accel"))), "/serve": text(await serve.handle(get("/serve")))]
            await serve.stop()
            accel.stop()
            heartRate.stop()
            devices.stop()
            await central.close()
            return (css, pages)
        }
    }

    /// The bodies of the stylesheet's narrow-screen (`max-width`) media rules.
    static func narrowRules(_ css: String) -> [String] {
        var out: [String] = []
        var rest = css[...]
        while let at = rest.range(of: "@media (max-width") {
            guard let open = rest[at.upperBound...].firstIndex(of: "{") else { break }
            var depth = 0, index = open
            while index < rest.endIndex {
                if rest[index] == "{" { depth += 1 }
                if rest[index] == "}" { depth -= 1; if depth == 0 { break } }
                index = rest.index(after: index)
            }
            out.append(String(rest[open..<index]))
            rest = index < rest.endIndex ? rest[rest.index(after: index)...] : ""
        }
        return out
    }

    func testANarrowScreenDropsAColumnByItsClassHeaderAndCellsAlike() async throws {
        let (css, pages) = try await served()
        let narrow = Self.narrowRules(css)
        XCTAssertFalse(narrow.isEmpty, "the stylesheet has narrow-screen rules")
        for rule in narrow {
            for positional in [":last-child", ":first-child", ":nth-child", ":nth-last-child", ":last-of-type", ":nth-of-type"] {
                XCTAssertFalse(rule.contains(positional), "a narrow-screen rule hides by position (\(positional)), hitting every table: \(rule)")
            }
        }
        // Each cell class hidden there is hidden on its header too, and the tables whose
        // scripts give cells that class mark their header with it.
        let hidden = narrow.joined().matches(#"td\.([A-Za-z0-9_-]+)"#)
        XCTAssertTrue(hidden.contains("ad"), "the advertisement column is dropped: \(narrow)")
        for name in hidden {
            XCTAssertTrue(narrow.joined().contains("th.\(name)"), "td.\(name) is hidden, th.\(name) too: \(narrow)")
        }
        for path in ["/devices", "/heart-rate"] {
            let page = try XCTUnwrap(pages[path])
            XCTAssertTrue(page.contains(#"<th class="ad">Advertisement</th>"#), "\(path): the Advertisement header carries the class of its cells")
        }
        for (path, page) in pages {
            XCTAssertTrue(page.contains("<table"), "\(path) has a table")
        }
    }
}

private extension String {
    /// The first capture group of each match of `pattern`.
    func matches(_ pattern: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let ns = self as NSString
        return regex.matches(in: self, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: 1)) }
    }
}
