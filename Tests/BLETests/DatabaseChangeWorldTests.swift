import BLE
import BLEHost
import BLEVirtual
import BLEWire
import XCTest
import BLETestSupport

/// Our GATT client against our own GATT server whose application changes the database while
/// the client's read is outstanding (Core Vol 3 Part G §7.1), two hosts on the virtual radio in
/// virtual time. The server moves service FE60 to other handles from inside the read's handler,
/// so its Service Changed indications reach the client before the read's answer, which was
/// made for the old layout and must not be taken.
final class DatabaseChangeWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFE60)
    static let moving = BluetoothUUID(0xFE61)
    /// Added after FE60, so that FE60 added again lands after it, at other handles.
    static let filler = BluetoothUUID(0xFE70)

    static let definition = GATTServiceDefinition(uuid: service, characteristics: [
        GATTCharacteristicDefinition(uuid: moving, properties: [.read], permissions: [.read], value: nil),
    ])

    /// A peripheral manager whose FE61 read handler moves FE60 (remove, add again after the
    /// filler) and answers "STALE" when `movesEveryRead` or on the first read, else "FRESH";
    /// `reads` collects the handles read.
    struct Mover {
        let manager: PeripheralManager
        let address: DeviceAddress
        let reads: Collected<UInt16>

        static func open(_ world: VirtualWorld, movesEveryRead: Bool) async throws -> Mover {
            let (manager, _) = try await world.addPeripheralManager(name: "Mover")
            let first = try await manager.add(definition)
            try await manager.add(GATTServiceDefinition(uuid: filler, characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFE71), properties: [.read], permissions: [.read], value: [0x00]),
            ]))
            let reads = Collected<UInt16>()
            let current = Collected<GATTServiceHandles>()
            current.append(first)
            @Sendable func handler(_ request: GATTReadRequest) async -> Result<[UInt8], ATTErrorCode> {
                reads.append(request.handle)
                guard movesEveryRead || reads.all.count == 1, let old = current.all.last else { return .success(Array("FRESH".utf8)) }
                do {
                    try await manager.remove(old)
                    let moved = try await manager.add(definition)
                    current.append(moved)
                    if let value = moved[moving]?.valueHandle { await manager.setReadHandler(forHandle: value, handler) }
                } catch {
                    return .failure(.unlikelyError)
                }
                return .success(Array("STALE".utf8))
            }
            let value = try XCTUnwrap(first[moving]?.valueHandle)
            await manager.setReadHandler(forHandle: value, handler)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Mover").build())
            let own = await manager.address
            return Mover(manager: manager, address: try XCTUnwrap(own), reads: reads)
        }
    }

    /// Connects, discovers the services, subscribes to Service Changed (the stack does when the
    /// GATT service's characteristics are discovered) and finds FE61.
    static func located(_ world: VirtualWorld, _ mover: Mover) async throws -> (Central, Peripheral, GATTCharacteristic) {
        let (central, _) = try await world.addCentral()
        let p = try await central.connect(mover.address)
        let services = try await p.discoverServices()
        let gatt = try XCTUnwrap(services.first { $0.uuid == GATTUUID.genericAttributeService })
        _ = try await p.discoverCharacteristics(for: gatt)
        let fe60 = try XCTUnwrap(services.first { $0.uuid == service })
        let found = try await p.discoverCharacteristics([moving], for: fe60)
        return (central, p, try XCTUnwrap(found.first))
    }

    func testAReadOutstandingWhileThePeripheralMovesTheServiceReturnsTheValueFromItsNewPlace() async throws {
        try await VirtualWorld.run { world in
            let mover = try await Mover.open(world, movesEveryRead: false)
            let (central, p, c) = try await Self.located(world, mover)
            let value = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: value, as: UTF8.self), "FRESH")
            let reads = mover.reads.all
            XCTAssertEqual(reads.count, 2, "read once where it was, once where it moved: \(reads)")
            XCTAssertEqual(reads.first, c.valueHandle)
            XCTAssertNotEqual(reads.last, c.valueHandle)
            await central.close()
            await mover.manager.close()
        }
    }

    /// A server that moves the service on every read: the client reads twice (once where the
    /// characteristic was, once where it found it again) and reports the change, typed.
    func testAPeripheralThatChangesOnEveryReadGetsTwoReadsAndATypedError() async throws {
        try await VirtualWorld.run { world in
            let mover = try await Mover.open(world, movesEveryRead: true)
            let (central, p, c) = try await Self.located(world, mover)
            do {
                let value = try await p.readValue(for: c)
                XCTFail("expected the change to be reported, got \(String(decoding: value, as: UTF8.self))")
            } catch let BLEError.gatt(error) {
                guard case .databaseChanged = error else { return XCTFail("expected .databaseChanged, got \(error)") }
                let text = "\(BLEError.gatt(error))"
                XCTAssertTrue(text.hasPrefix("GATT: the server's database changed (handles 0x"), text)
                XCTAssertFalse(text.contains("\n"), "one line for `ble`'s stderr")
            }
            XCTAssertEqual(mover.reads.all.count, 2, "\(mover.reads.all)")
            await central.close()
            await mover.manager.close()
        }
    }
}
