@testable import BLE
import BLEHost
import BLETestSupport
import XCTest

/// Encryption key sizes outside 7...16 octets (Core v5.4 Vol 3 Part H §2.3.4, §3.5.1) are
/// refused when the host is opened, before anything goes on the wire.
final class KeySizeSettingsTests: XCTestCase {
    func open(minimum: UInt8, maximum: UInt8) async -> Error? {
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.pairing.minimumKeySize = minimum
        config.security.pairing.maximumKeySize = maximum
        do {
            let central = try await Central.open(transport: t.hostEnd, configuration: config)
            await central.close()
            return nil
        } catch {
            return error
        }
    }

    func testKeySizesOutsideSevenToSixteenAreRefusedAtOpen() async {
        for (minimum, maximum) in [(UInt8(6), UInt8(16)), (0, 16), (7, 17), (16, 255), (12, 10)] {
            let error = await open(minimum: minimum, maximum: maximum)
            guard case let .invalidArgument(message)? = error as? BLEError else {
                XCTFail("key sizes \(minimum)...\(maximum): expected invalidArgument, got \(String(describing: error))")
                continue
            }
            XCTAssertTrue(message.contains("key size"), message)
        }
    }

    func testKeySizesInsideSevenToSixteenOpen() async {
        for (minimum, maximum) in [(UInt8(7), UInt8(16)), (16, 16), (7, 7)] {
            let error = await open(minimum: minimum, maximum: maximum)
            XCTAssertNil(error, "key sizes \(minimum)...\(maximum)")
        }
    }

    func testTheSettingsCheckNamesTheOffendingRange() {
        var settings = SMPPairingSettings()
        settings.minimumKeySize = 6
        XCTAssertThrowsError(try settings.validate()) { error in
            XCTAssertEqual(error as? SMPSettingsError, .keySizeOutOfRange(minimum: 6, maximum: 16))
        }
        settings.minimumKeySize = 16
        settings.maximumKeySize = 12
        XCTAssertThrowsError(try settings.validate()) { error in
            XCTAssertEqual(error as? SMPSettingsError, .keySizeOutOfRange(minimum: 16, maximum: 12))
        }
    }
}
