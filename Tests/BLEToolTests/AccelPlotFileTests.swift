import BLE
import BLESystems
import Synchronization
import XCTest

/// `ble accel --plot FILE.svg` is written however the session ends ("--plot is written in every
/// case"), also when the controller cannot even be opened.
final class AccelPlotFileTests: XCTestCase {
    struct NoController: Error {}

    func testThePlotIsWrittenWhenTheControllerCannotBeOpened() async throws {
        let written = Mutex<[String]>([])
        let output = AccelerometerOutput(mode: .json)
        do {
            try await output.chart(opening: { throw NoController() }, options: AccelerometerCentralOptions(), pick: nil,
                                   plot: { svg in written.withLock { $0.append(svg) } })
            XCTFail("a controller that does not exist was opened")
        } catch is NoController {}
        let plots = written.withLock { $0 }
        XCTAssertEqual(plots.count, 1, "written once")
        let svg = plots.first ?? ""
        XCTAssertTrue(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"), "an SVG, not an empty file: \(svg.prefix(80))")
        XCTAssertTrue(svg.contains("0 samples"), "the empty session's chart")
    }
}
