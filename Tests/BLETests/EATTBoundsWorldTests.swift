@testable import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// What a hostile Enhanced ATT peer cannot make our host hold without bound (Core spec Vol 3
/// Part G §5.3, Vol 3 Part A §10.2 credit-based flow control): the peer opens 0x0027 channels
/// itself as application channels on one of our hosts and writes raw ATT PDUs on them.
final class EATTBoundsWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xEB00)
    static let notifying = BluetoothUUID(0xEB01)
    static let removable = BluetoothUUID(0xEC00)
    static let writable = BluetoothUUID(0xEC01)

    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let peripheral: Peripheral
        let handles: GATTServiceHandles
    }

    static func rig(_ world: VirtualWorld) async throws -> Rig {
        var peripheral = HostConfiguration()
        peripheral.offersEnhancedATT = true
        peripheral.security.agent = FixedPairingAgent(confirms: true)
        var central = HostConfiguration()
        central.security.agent = FixedPairingAgent(confirms: true)
        central.security.raisesSecurityOnDemand = false
        let (manager, device) = try await world.addPeripheralManager(name: "Bounds", configuration: peripheral)
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: notifying, properties: [.read, .notify], permissions: [.read], value: [0]),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Bounds").build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
        _ = try await p.pair()
        return Rig(central: c, manager: manager, peripheral: p, handles: handles)
    }

    /// SDUs waiting for the peer's credits on the server's side of the bearer whose local CID is `cid`.
    static func queued(_ host: HostController, cid: UInt16) async -> Int {
        await host.run { host in
            host.connections.links.handles.first.map { host.queuedATTSDUs(handle: $0, bearer: .enhanced(cid: cid)) } ?? -1
        }
    }

    func testAPeerThatWithholdsCreditsCannotMakeTheServerQueueAnswersWithoutBound() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            // One initial credit and, since the SDUs are never read, never an LE Flow Control
            // Credit: the first answer takes the only credit, none after it can leave.
            let bearers = try await rig.peripheral.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1,
                                                                   parameters: CreditBasedChannelParameters(mtu: 64, mps: 64, initialCredits: 1))
            let bearer = try XCTUnwrap(bearers.first)
            let serverCID = bearer.info.remoteCID
            // 60 Read Requests of the first service declaration, more than the 16 credits the
            // server grants at a time.
            var senders: [Task<Void, Never>] = []
            for _ in 0..<60 {
                senders.append(Task(executorPreference: world.clock.taskExecutor) { try? await bearer.send([0x0A, 0x01, 0x00]) })
            }
            try await world.clock.sleep(for: .seconds(3))
            let queued = await Self.queued(rig.manager.host, cid: serverCID)
            XCTAssertGreaterThan(queued, 0, "the answers wait for the peer's credits")
            XCTAssertLessThanOrEqual(queued, 16, "no more answers than the credits the server granted")
            for s in senders { s.cancel() }
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// Whether `events` carries `.readyToUpdateSubscribers` within `bound` of virtual time.
    static func readyToUpdate(_ events: PeripheralManagerEventStream, within bound: Duration, _ world: VirtualWorld) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask(executorPreference: world.clock.taskExecutor) {
                for await event in events { if case .readyToUpdateSubscribers = event { return true } }
                return false
            }
            group.addTask(executorPreference: world.clock.taskExecutor) {
                try? await world.clock.sleep(for: bound)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func testAnEATTBearerClosingWithAFullUpdateQueueSignalsReadyToUpdateSubscribers() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let events = await rig.manager.events
            let bearers = try await rig.peripheral.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1,
                                                                   parameters: CreditBasedChannelParameters(mtu: 517, mps: 247, initialCredits: 1))
            let bearer = try XCTUnwrap(bearers.first)
            let h = try XCTUnwrap(rig.handles[Self.notifying])
            let cccd = try XCTUnwrap(h.cccdHandle)
            try await bearer.send([0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00])
            var it = bearer.makeAsyncIterator()
            let written = try await it.next()
            XCTAssertEqual(written, [0x13])
            // The Write Response took the peer's only credit: the notifications pile up on the bearer.
            var result = UpdateValueResult.queued(centrals: 1)
            var sent = 0
            while case .queued = result, sent < 100 {
                result = await rig.manager.updateValue([UInt8(sent & 0xFF)], forHandle: h.valueHandle)
                sent += 1
            }
            XCTAssertEqual(result, .queueFull)
            await bearer.close()
            let ready = await Self.readyToUpdate(events, within: .seconds(5), world)
            XCTAssertTrue(ready, "the unenhanced bearer has room")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testRemovingAServiceForgetsItsPreparedWritesOnEATTBearersToo() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let doomed = try await rig.manager.add(GATTServiceDefinition(uuid: Self.removable, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.writable, properties: [.read, .write], permissions: [.read, .write], value: [0]),
            ]))
            let bearers = try await rig.peripheral.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1,
                                                                   parameters: CreditBasedChannelParameters(mtu: 517, mps: 247, initialCredits: 8))
            let bearer = try XCTUnwrap(bearers.first)
            var it = bearer.makeAsyncIterator()
            let h = try XCTUnwrap(doomed[Self.writable]).valueHandle
            let le = [UInt8(h & 0xFF), UInt8(h >> 8)]
            try await bearer.send([0x16] + le + [0x00, 0x00, 0x42])
            let prepared = try await it.next()
            XCTAssertEqual(prepared, [0x17] + le + [0x00, 0x00, 0x42])
            // The service goes (Vol 3 Part G §2.5.2: its handles may be reused): what was
            // prepared for it goes with it, on every bearer, and the Execute Write says so
            // (Invalid Handle where it was) rather than answer success for a write it dropped.
            try await rig.manager.remove(doomed)
            try await bearer.send([0x18, 0x01])
            let executed = try await it.next()
            XCTAssertEqual(executed, [0x01, 0x18] + le + [0x01], "Invalid Handle, nothing written")
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

