@testable import BLE
import BLEHost
import BLETestSupport
import BLEVirtual
import XCTest

/// The Server Supported Features value (Core Vol 3 Part G §7.4) the client reads on an
/// encrypted link to learn whether Enhanced ATT is offered is kept in the bonded server's
/// attribute cache (§2.5.2), so a bonded reconnection by a new host process reads it no more:
/// the goal of "0 requests to a bonded server" (`scripts/bench.sh` counted the read once it came
/// before the first value).
final class ServerFeaturesCacheWorldTests: XCTestCase {
    func testABondedReconnectionTakesServerSupportedFeaturesFromTheCache() async throws {
        try await VirtualWorld.run { world in
            var peripheral = HostConfiguration()
            peripheral.offersEnhancedATT = true
            peripheral.security.agent = FixedPairingAgent(confirms: true)
            let (manager, sensor) = try await world.addPeripheralManager(name: "SSF", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("SSF").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let device = await world.radio.addDevice()
            let capture = RecordingTransport(wrapping: device.transport, executor: world.clock.taskExecutor)
            let store = InMemoryGATTCacheStore()
            var configuration = HostConfiguration()
            configuration.gattCache = store
            configuration.security.agent = FixedPairingAgent(confirms: true)
            let central = try await Central.open(transport: capture, clock: world.clock, configuration: configuration)
            let address = DeviceAddress(sensor.address, type: .public)

            let first = try await central.connect(address, timeout: .seconds(5))
            _ = try await first.pair()
            let opened = await first.enhancedATTBearersSettled()
            XCTAssertEqual(opened, 2)
            _ = try await first.characteristic(GATTUUID.serviceChanged)
            await first.completeCaching()
            try await first.disconnect()
            let cold = try ATTRoundTrips(btsnoop: capture.btsnoop, connection: 1, wholeConnection: true)
            XCTAssertTrue(cold.requests.contains(0x08), "the cold link reads Server Supported Features: \(cold)")
            let stored = try XCTUnwrap(store.load(.bonded(address)), "stored under the bonded identity: \(store.fileNames)")
            XCTAssertEqual(stored.serverFeatures?.first.map { $0 & 0x01 }, 0x01, "kept with the bonded server's cache")

            // As a new host process would start: nothing learned in memory.
            await central.host.run { $0.client.enhancedSetups.serverFeatures = [:] }
            let again = try await central.connect(address, timeout: .seconds(5))
            try await again.encrypt()
            let reopened = await again.enhancedATTBearersSettled()
            XCTAssertEqual(reopened, 2, "EATT opened from what the cache kept")
            try await again.disconnect()
            let bonded = try ATTRoundTrips(btsnoop: capture.btsnoop, connection: 2, wholeConnection: true)
            XCTAssertFalse(bonded.requests.contains(0x08), "no Read By Type for Server Supported Features: \(bonded)")
            await central.close()
            await manager.close()
        }
    }
}
