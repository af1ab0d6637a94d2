import Foundation
import XCTest

/// The host's parts know it only through their protocols (docs/ARCHITECTURE.md, "What a part
/// may see of the host"): no file under Sources/BLE/Host but the driver's (`HostController*`)
/// names `HostController` in code.
final class HostPartsBoundaryTests: XCTestCase {
    func testNoFileUnderHostButTheDriversNamesHostControllerInCode() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let host = root.appendingPathComponent("Sources/BLE/Host")
        let files = try FileManager.default.contentsOfDirectory(atPath: host.path).filter { $0.hasSuffix(".swift") }
        XCTAssertFalse(files.isEmpty, "no sources found at \(host.path)")
        var offenders: [String] = []
        for name in files.sorted() where !name.hasPrefix("HostController") {
            let text = try String(contentsOf: host.appendingPathComponent(name), encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains("HostController") { offenders.append("\(name):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
        }
        XCTAssertEqual(offenders, [], "files under Sources/BLE/Host other than the driver's name HostController")
    }
}
