import XCTest
import BLEWire
@testable import BLEProfiles

/// The step-by-step sample's constants and texts (docs/SYSTEMS.md S2).
final class SampleProfileTests: XCTestCase {
    func testUUIDsAndProperties() {
        XCTAssertEqual(SampleProfile.service.description, "068c47b7-fc04-4d47-975a-7952be1a576f")
        XCTAssertEqual(SampleProfile.readWrite.description, "e3737b3f-a08d-405b-b32d-35a8f6c64c5d")
        XCTAssertEqual(SampleProfile.notify.description, "c9da2ce8-d119-40d5-90f7-ef24627e8193")
        XCTAssertEqual(SampleProfile.readWriteProperties, 0x0A)
        XCTAssertEqual(SampleProfile.notifyProperties, 0x10)
        XCTAssertEqual(Array(SampleProfile.initialValue.utf8), Array("Hello World".utf8))
    }

    func testTextsHaveThreeDigits() {
        XCTAssertEqual(SampleProfile.writeData(42), "Write Data 042")
        XCTAssertEqual(SampleProfile.writeData(0), "Write Data 000")
        XCTAssertEqual(SampleProfile.writeData(999), "Write Data 999")
        XCTAssertEqual(SampleProfile.notifyData(7), "Notify Data 007")
        XCTAssertEqual(SampleProfile.notifyData(123), "Notify Data 123")
    }

    func testOutOfRangeNumbersWrapInsteadOfTrapping() {
        XCTAssertEqual(SampleProfile.writeData(1000), "Write Data 000")
        XCTAssertEqual(SampleProfile.writeData(1042), "Write Data 042")
        XCTAssertEqual(SampleProfile.writeData(-1), "Write Data 999")
        XCTAssertEqual(SampleProfile.notifyData(Int.min), "Notify Data " + SampleProfile.threeDigits(Int.min))
        XCTAssertEqual(SampleProfile.threeDigits(Int.min).count, 3)
        XCTAssertEqual(SampleProfile.threeDigits(Int.max), "807")
    }
}
