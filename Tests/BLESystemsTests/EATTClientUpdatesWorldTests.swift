import BLE
import BLEHost
import BLEVirtual
import BLEWire
import XCTest

/// Notifications, Multiple Handle Value Notifications and indications reaching our GATT client
/// when our server offers Enhanced ATT (Core spec Vol 3 Part F §3.2.11, §3.4.7; Vol 3 Part G
/// §5.3), on the virtual radio: the server sends updates on its best bearer, an enhanced one
/// (its ATT_MTU is the channel's, larger than the unenhanced bearer's 23), so the client must
/// take them there and confirm each indication on the bearer it came on.
final class EATTClientUpdatesWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFE60)
    static let first = BluetoothUUID(0xFE61)
    static let second = BluetoothUUID(0xFE62)
    static let indicated = BluetoothUUID(0xFE63)

    /// Up to `count` values of `stream`, fewer if `limit` of virtual time passes first.
    static func values(_ stream: AsyncStream<[UInt8]>, count: Int, within limit: Duration, _ world: VirtualWorld) async -> [[UInt8]] {
        await withTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask(executorPreference: world.clock.taskExecutor) {
                var got: [[UInt8]] = []
                for await v in stream {
                    got.append(v)
                    if got.count == count { break }
                }
                return got
            }
            group.addTask(executorPreference: world.clock.taskExecutor) {
                try? await world.clock.sleep(for: limit)
                return nil
            }
            let done = await group.next() ?? nil
            group.cancelAll()
            return done ?? []
        }
    }

    func testNotificationsAndIndicationsArriveOverEnhancedBearers() async throws {
        try await VirtualWorld.run { world in
            var server = HostConfiguration()
            server.offersEnhancedATT = true
            let (manager, _) = try await world.addPeripheralManager(name: "Updates", configuration: server)
            let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.first, properties: [.notify], permissions: [], value: [0]),
                GATTCharacteristicDefinition(uuid: Self.second, properties: [.notify], permissions: [], value: [0]),
                GATTCharacteristicDefinition(uuid: Self.indicated, properties: [.indicate], permissions: [], value: [0]),
            ]))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Updates").build())
            let own = await manager.address
            let (central, _) = try await world.addCentral()
            let p = try await central.connect(try XCTUnwrap(own))
            _ = try await p.pair()
            let open = await p.enhancedATTBearersSettled()
            XCTAssertEqual(open, 2)
            // Client Supported Features 0x07: the server may send Multiple Handle Value Notifications.
            await p.completeCaching()

            var streams: [AsyncStream<[UInt8]>] = []
            for uuid in [Self.first, Self.second, Self.indicated] {
                let found = try await p.characteristic(uuid)
                let c = try XCTUnwrap(found)
                streams.append(await p.notifications(for: c))
                try await p.enableUpdates(for: c)
            }
            let (h1, h2, h3) = (try XCTUnwrap(handles.valueHandle(for: Self.first)), try XCTUnwrap(handles.valueHandle(for: Self.second)),
                                try XCTUnwrap(handles.valueHandle(for: Self.indicated)))

            let sent = await manager.updateValues([(h1, Array(repeating: 0xA1, count: 40)), (h2, [0xB2])])
            XCTAssertEqual(sent, .queued(centrals: 1))
            let firstValues = await Self.values(streams[0], count: 1, within: .seconds(5), world)
            let secondValues = await Self.values(streams[1], count: 1, within: .seconds(5), world)
            XCTAssertEqual(firstValues, [Array(repeating: 0xA1, count: 40)])
            XCTAssertEqual(secondValues, [[0xB2]])

            // More indications than bearers: some bearer carries two, and sends the second only
            // after the client confirmed the first on it (one indication at a time, §3.4.7.2).
            for i in 1...4 { _ = try await manager.updateValueWaiting([UInt8(i)], forHandle: h3) }
            let indications = await Self.values(streams[2], count: 4, within: .seconds(60), world)
            // Across bearers their order is not kept (only per bearer), so compare as a set.
            XCTAssertEqual(indications.sorted { ($0.first ?? 0) < ($1.first ?? 0) }, [[1], [2], [3], [4]])
            XCTAssertEqual(p.state, .connected)
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }
}
