import Foundation
import XCTest
@testable import ble

/// `ble accel --plot FILE.svg` is written however the command ends ("--plot is written in every
/// case"), also when the controller cannot even be opened.
final class AccelPlotFileTests: XCTestCase {
    func testThePlotIsWrittenWhenTheControllerCannotBeOpened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plot = directory.appendingPathComponent("session.svg").path
        let args = try AccelCommand.parse(["--hci", "serial:" + directory.appendingPathComponent("no-such-tty").path, "--plot", plot, "--json"])
        let command = try AccelCommand(args)
        do {
            try await command.run()
            XCTFail("a controller that does not exist was opened")
        } catch {}
        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        XCTAssertTrue(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"), "an SVG, not an empty file: \(svg.prefix(80))")
        XCTAssertTrue(svg.contains("0 samples"), "the empty session's chart")
    }
}
