import BLE
import BLEHost
import BLEVirtual
import BLEWire
import XCTest

/// Our GATT client against our own GATT server offering Enhanced ATT (Core spec Vol 3 Part G
/// §5.3, Part F §3.2.11) on the virtual radio, in virtual time: bearers open after pairing,
/// independent reads run on different bearers, a transaction timeout on an enhanced bearer
/// closes only that bearer (Part F §3.3.3), and a client configured without EATT stays on the
/// unenhanced bearer.
final class EATTClientWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFE50)
    /// Answered only after `opener` was read.
    static let gated = BluetoothUUID(0xFE51)
    static let opener = BluetoothUUID(0xFE52)
    /// Answered long after the client's 30 s transaction timeout.
    static let silent = BluetoothUUID(0xFE53)

    /// A server offering EATT whose `gated` read waits for a read of `opener`, and whose
    /// `silent` read waits 100 s; `arrived` yields each dynamic read's handle as it comes in.
    struct Rig {
        let manager: PeripheralManager
        let central: Central
        let address: DeviceAddress
        let handles: GATTServiceHandles
        let arrived: AsyncStream<UInt16>

        static func open(_ world: VirtualWorld, client: HostConfiguration = HostConfiguration()) async throws -> Rig {
            var server = HostConfiguration()
            server.offersEnhancedATT = true
            server.applicationResponseTimeout = .seconds(200)
            let (manager, _) = try await world.addPeripheralManager(name: "EATT", configuration: server)
            let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
                GATTCharacteristicDefinition(uuid: gated, properties: [.read], permissions: [.read], value: nil),
                GATTCharacteristicDefinition(uuid: opener, properties: [.read], permissions: [.read], value: nil),
                GATTCharacteristicDefinition(uuid: silent, properties: [.read], permissions: [.read], value: nil),
            ]))
            let (arrived, arrival) = AsyncStream<UInt16>.makeStream()
            let (gate, opening) = AsyncStream<Void>.makeStream()
            let clock = world.clock
            await manager.setReadHandler(forHandle: try XCTUnwrap(handles.valueHandle(for: gated))) { request in
                arrival.yield(request.handle)
                for await _ in gate { return .success(Array("A after B".utf8)) }
                return .failure(.unlikelyError)
            }
            await manager.setReadHandler(forHandle: try XCTUnwrap(handles.valueHandle(for: opener))) { request in
                arrival.yield(request.handle)
                opening.yield()
                return .success(Array("B".utf8))
            }
            await manager.setReadHandler(forHandle: try XCTUnwrap(handles.valueHandle(for: silent))) { request in
                arrival.yield(request.handle)
                try? await clock.sleep(for: .seconds(100))
                return .success(Array("late".utf8))
            }
            try await manager.startAdvertising(AdvertisingData.Builder().localName("EATT").build())
            let own = await manager.address
            let address = try XCTUnwrap(own)
            let (central, _) = try await world.addCentral(configuration: client)
            return Rig(manager: manager, central: central, address: address, handles: handles, arrived: arrived)
        }

        func characteristic(_ uuid: BluetoothUUID, on p: Peripheral) async throws -> GATTCharacteristic {
            let found = try await p.characteristic(uuid)
            return try XCTUnwrap(found)
        }

        func close() async {
            await central.close()
            await manager.close()
        }
    }

    func testBearersOpenAfterPairingAndIndependentReadsRunInParallel() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Rig.open(world)
            let p = try await rig.central.connect(rig.address)
            let before = await p.enhancedATTBearerCount()
            XCTAssertEqual(before, 0)
            _ = try await p.pair()
            let open = await p.enhancedATTBearersSettled()
            XCTAssertEqual(open, 2)
            let gated = try await rig.characteristic(Self.gated, on: p)
            let opener = try await rig.characteristic(Self.opener, on: p)
            var arrivals = rig.arrived.makeAsyncIterator()

            // The gated read holds a bearer until the opener's read arrives, which it can only
            // do on another bearer; on one bearer the server answers Unlikely Error after 200 s.
            let a = Task(executorPreference: world.clock.taskExecutor) { try await p.readValue(for: gated) }
            let first = await arrivals.next()
            XCTAssertEqual(first, gated.valueHandle)
            let b = try await p.readValue(for: opener)
            XCTAssertEqual(b, Array("B".utf8))
            let aValue = try await a.value
            XCTAssertEqual(aValue, Array("A after B".utf8))
            try await p.disconnect()
            await rig.close()
        }
    }

    func testATimeoutOnAnEnhancedBearerClosesOnlyThatBearer() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Rig.open(world)
            let p = try await rig.central.connect(rig.address)
            _ = try await p.pair()
            let open = await p.enhancedATTBearersSettled()
            XCTAssertEqual(open, 2)
            let gated = try await rig.characteristic(Self.gated, on: p)
            let opener = try await rig.characteristic(Self.opener, on: p)
            let silent = try await rig.characteristic(Self.silent, on: p)
            var arrivals = rig.arrived.makeAsyncIterator()

            // The unenhanced bearer and one enhanced bearer busy; the silent read on the other.
            let a = Task(executorPreference: world.clock.taskExecutor) { try await p.readValue(for: gated) }
            let gatedArrived = await arrivals.next()
            XCTAssertEqual(gatedArrived, gated.valueHandle)
            let c = Task(executorPreference: world.clock.taskExecutor) { try await p.readValue(for: silent) }
            let silentArrived = await arrivals.next()
            XCTAssertEqual(silentArrived, silent.valueHandle)
            let b = try await p.readValue(for: opener)
            XCTAssertEqual(b, Array("B".utf8))
            _ = try await a.value

            do {
                _ = try await c.value
                XCTFail("the silent read should time out")
            } catch BLEError.gatt(.timeout) {
                // Vol 3 Part F §3.3.3, on that bearer only.
            }
            let left = await p.enhancedATTBearerCount()
            XCTAssertEqual(left, 1, "only the timed-out bearer closed")
            XCTAssertEqual(p.state, .connected, "the link stays up")
            let again = try await p.readValue(for: opener)
            XCTAssertEqual(again, Array("B".utf8))
            try await p.disconnect()
            await rig.close()
        }
    }

    func testAClientConfiguredWithoutEATTStaysOnTheUnenhancedBearer() async throws {
        try await VirtualWorld.run { world in
            var client = HostConfiguration()
            client.enhancedATTBearers = 0
            let rig = try await Rig.open(world, client: client)
            let p = try await rig.central.connect(rig.address)
            _ = try await p.pair()
            let open = await p.enhancedATTBearersSettled()
            XCTAssertEqual(open, 0)
            let opener = try await rig.characteristic(Self.opener, on: p)
            let values = try await p.readValues(of: [opener, opener])
            XCTAssertEqual(values, [Array("B".utf8), Array("B".utf8)])
            try await p.disconnect()
            await rig.close()
        }
    }
}
