import Foundation
import XCTest
@testable import BLESystems

/// `--password-file`: the first line, whatever the line ends, a byte-order mark or not.
final class BrokerPasswordFileTests: XCTestCase {
    private func file(_ bytes: [UInt8], mode: Int = 0o600) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pw-\(getpid())-\(UInt32.random(in: 1...999_999))").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: mode]))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testTheFirstLineWhateverItsEnd() throws {
        for (bytes, expected) in [(Array("pw\n".utf8), "pw"), (Array("pw\r\nsecond\r\n".utf8), "pw"), (Array("pw".utf8), "pw"),
                                  ([0xEF, 0xBB, 0xBF] + Array("pw\r\n".utf8), "pw"), (Array(" pw \n".utf8), " pw ")] {
            var warnings: [String] = []
            XCTAssertEqual(try BrokerPasswordFile.read(try file(bytes)) { warnings.append($0) }, expected, "\(bytes)")
            XCTAssertEqual(warnings, [])
        }
    }

    func testAnEmptyFirstLineOrNoFileIsRefused() throws {
        XCTAssertThrowsError(try BrokerPasswordFile.read(try file(Array("\nsecond".utf8))) { _ in })
        XCTAssertThrowsError(try BrokerPasswordFile.read(try file(Array("\r\n".utf8))) { _ in })
        XCTAssertThrowsError(try BrokerPasswordFile.read("/nonexistent/pw") { _ in })
    }

    func testAFileOthersMayReadIsWarnedAboutThroughASymlink() throws {
        let target = try file(Array("pw\n".utf8), mode: 0o644)
        let link = target + ".link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: link) }
        var warnings: [String] = []
        XCTAssertEqual(try BrokerPasswordFile.read(link) { warnings.append($0) }, "pw")
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings.first?.contains("644") == true, "\(warnings)")
        XCTAssertFalse(warnings.joined().contains("pw\n"))
    }
}
