import BLE
import BLEHost
import BLETestSupport
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

    /// Review finding 11: a bonded server keeps the bits a client set (§7.2) and refuses a write
    /// that clears one (Value Not Allowed). Our client, its record of what it wrote gone, asks
    /// for fewer bits than the server holds: it reads what the server holds, adds its own, and
    /// records that, so the next connection does not write (and get refused) again.
    func testABondedServerHoldingMoreBitsIsReadAndTheUnionRecorded() async throws {
        try await VirtualWorld.run { world in
            var configuration = HostConfiguration()
            configuration.enhancedATTBearers = 0 // wants 0x05
            let rig = try await GATTCacheRig.open(world, name: "Kept", central: configuration)
            // First connection: bonded, and 0x07 written outside our record (as a client
            // configured with EATT bearers, whose cache was then lost, would have).
            let first = try await rig.central.connect(rig.address)
            _ = try await first.pair()
            let located = try await first.characteristic(GATTUUID.clientSupportedFeatures)
            let csf = try XCTUnwrap(located)
            try await first.writeValue([0x07], for: csf)
            try await first.disconnect()

            let second = try await rig.central.connect(rig.address)
            await second.completeCaching()
            let held = try await second.readValue(for: csf)
            XCTAssertEqual(held, [0x07], "the server kept its bits")
            try await second.disconnect()

            // Third connection: what the server holds is recorded as written, so no CSF write.
            let third = try await rig.central.connect(rig.address)
            let before = try ATTRoundTrips(btsnoop: rig.capture.btsnoop, connection: 3).requests.filter { $0 == 0x12 }.count
            await third.completeCaching()
            let after = try ATTRoundTrips(btsnoop: rig.capture.btsnoop, connection: 3).requests.filter { $0 == 0x12 }.count
            XCTAssertEqual(after, before, "no Write Request: the bonded server holds every bit we want")
            try await third.disconnect()
            await rig.close()
        }
    }
}
