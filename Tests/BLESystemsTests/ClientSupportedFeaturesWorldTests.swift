import BLE
import BLEHost
import BLEVirtual
import BLEWire
import XCTest

/// The Client Supported Features our client writes (Core spec Vol 3 Part G §7.2): robust caching
/// (bit 0), Enhanced ATT bearer (bit 1, unless `HostConfiguration.enhancedATTBearers` is 0) and
/// Multiple Handle Value Notifications (bit 2), read back from our own server on the virtual radio.
final class ClientSupportedFeaturesWorldTests: XCTestCase {
    private func writtenFeatures(central configuration: HostConfiguration) async throws -> [UInt8] {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world, name: "Features", central: configuration)
            let p = try await rig.central.connect(rig.address)
            await p.completeCaching()
            let located = try await p.characteristic(GATTUUID.clientSupportedFeatures)
            let value = try await p.readValue(for: try XCTUnwrap(located))
            try await p.disconnect()
            await rig.close()
            return value
        }
    }

    func testDefaultClientSetsRobustCachingEATTAndMultipleNotifications() async throws {
        let value = try await writtenFeatures(central: HostConfiguration())
        XCTAssertEqual(value, [0x07])
    }

    func testClientWithoutEnhancedBearersLeavesTheEATTBitClear() async throws {
        var configuration = HostConfiguration()
        configuration.enhancedATTBearers = 0
        let value = try await writtenFeatures(central: configuration)
        XCTAssertEqual(value, [0x05])
    }
}
