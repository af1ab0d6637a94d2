import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Our GATT server offering Enhanced ATT (Core spec Vol 3 Part G §5.3, Vol 3 Part F §3.2.11) to a
/// central on the virtual radio, in virtual time. The central is one of our hosts acting as a
/// raw EATT client: it opens the 0x0027 channels itself (`openL2CAPChannels`, application
/// channels on its side) and writes ATT PDUs on them byte by byte.
final class EATTServerWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xEA00)
    static let first = BluetoothUUID(0xEA01)
    static let second = BluetoothUUID(0xEA02)
    static let slow = BluetoothUUID(0xEA03)

    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let address: DeviceAddress
        let handles: GATTServiceHandles
    }

    static func rig(_ world: VirtualWorld, offersEnhancedATT: Bool = true) async throws -> Rig {
        var peripheral = HostConfiguration()
        peripheral.offersEnhancedATT = offersEnhancedATT
        peripheral.security.agent = FixedPairingAgent(confirms: true)
        var central = HostConfiguration()
        central.security.agent = FixedPairingAgent(confirms: true)
        central.security.raisesSecurityOnDemand = false
        // The test is the EATT client here, on raw channels: our GATT client opens none of its own.
        central.enhancedATTBearers = 0
        let (manager, device) = try await world.addPeripheralManager(name: "EATT", configuration: peripheral)
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: first, properties: [.read, .notify, .indicate], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: second, properties: [.read, .notify], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: slow, properties: [.read], permissions: [.read], value: nil),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("EATT").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        return Rig(central: c, manager: manager, address: DeviceAddress(device.address, type: .public), handles: handles)
    }

    static func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

    /// Writes one ATT PDU on a bearer and reads the next one that comes back on it.
    static func exchange(_ pdu: [UInt8], on channel: LECreditBasedChannel) async throws -> [UInt8]? {
        try await channel.send(pdu)
        return try await next(on: channel)
    }

    static func next(on channel: LECreditBasedChannel) async throws -> [UInt8]? {
        var it = channel.makeAsyncIterator()
        return try await it.next()
    }

    func testEATTBearersServeRequestsInParallelShareTheCCCDsAndCarryNotifications() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let parameters = CreditBasedChannelParameters(mtu: 517, mps: 247, initialCredits: 8)
            // No EATT bearer on an unencrypted link (Vol 3 Part G §5.3.2): Insufficient Authentication.
            do {
                _ = try await p.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 2, parameters: parameters)
                XCTFail("an unencrypted link gets no EATT bearer")
            } catch let BLEError.l2cap(.refused(result)) {
                XCTAssertEqual(result, .insufficientAuthentication)
            }
            _ = try await p.pair()
            let db = try await p.discoverDatabase(readValues: true)
            XCTAssertEqual(db.offersEATT, true, "Server Supported Features bit 0")
            let features = try XCTUnwrap(db.services.flatMap(\.characteristics)
                .first { $0.characteristic.uuid == BluetoothUUID(0x2B29) }?.characteristic.valueHandle)

            // Answered once the test opens the gate (after discovery, which reads values).
            let (gate, open) = AsyncStream<Void>.makeStream()
            await rig.manager.setReadHandler(forHandle: try XCTUnwrap(rig.handles[Self.slow]).valueHandle) { _ in
                for await _ in gate { break }
                return .success(Array("slow".utf8))
            }

            let bearers = try await p.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 2, parameters: parameters)
            XCTAssertEqual(bearers.count, 2)
            // Updates go on the server's lowest-CID bearer among those of the largest ATT_MTU.
            let (notifying, other) = bearers[0].info.remoteCID < bearers[1].info.remoteCID ? (bearers[0], bearers[1]) : (bearers[1], bearers[0])
            let one = try XCTUnwrap(rig.handles[Self.first]), two = try XCTUnwrap(rig.handles[Self.second])

            // A CCCD written on one bearer ...
            let subscribed = try await Self.exchange([0x12] + Self.le(try XCTUnwrap(one.cccdHandle)) + [0x01, 0x00], on: other)
            XCTAssertEqual(subscribed, [0x13])
            // ... enables the notification that goes on the other.
            let update = await rig.manager.updateValue([0x42], forHandle: one.valueHandle)
            XCTAssertEqual(update, .queued(centrals: 1))
            let notification = try await Self.next(on: notifying)
            XCTAssertEqual(notification, [0x1B] + Self.le(one.valueHandle) + [0x42])

            // Exchange MTU is not used on an EATT bearer (Vol 3 Part F §3.4.2).
            let mtu = try await Self.exchange([0x02, 0x00, 0x02], on: other)
            XCTAssertEqual(mtu, [0x01, 0x02, 0x00, 0x00, 0x06])

            // A read the application answers slowly on one bearer does not hold up the other's.
            try await notifying.send([0x0A] + Self.le(try XCTUnwrap(rig.handles[Self.slow]).valueHandle))
            let quick = try await Self.exchange([0x0A] + Self.le(one.valueHandle), on: other)
            XCTAssertEqual(quick, [0x0B, 0x42])
            open.yield()
            let slow = try await Self.next(on: notifying)
            XCTAssertEqual(slow, [0x0B] + Array("slow".utf8))

            // With Client Supported Features bit 2 two values go in one Multiple Handle Value
            // Notification (Vol 3 Part F §3.4.7.4).
            let cccd2 = try await Self.exchange([0x12] + Self.le(try XCTUnwrap(two.cccdHandle)) + [0x01, 0x00], on: notifying)
            XCTAssertEqual(cccd2, [0x13])
            let bit2 = try await Self.exchange([0x12] + Self.le(features) + [0x04], on: other)
            XCTAssertEqual(bit2, [0x13])
            let both = await rig.manager.updateValues([(one.valueHandle, [1, 2]), (two.valueHandle, [3])])
            XCTAssertEqual(both, .queued(centrals: 1))
            let multiple = try await Self.next(on: notifying)
            XCTAssertEqual(multiple, [0x23] + Self.le(one.valueHandle) + [2, 0, 1, 2] + Self.le(two.valueHandle) + [1, 0, 3])

            // Closing one bearer leaves the link and the other bearer serving, and updates move to it.
            await notifying.close()
            let after = try await Self.exchange([0x0A] + Self.le(one.valueHandle), on: other)
            XCTAssertEqual(after, [0x0B, 1, 2])
            _ = await rig.manager.updateValue([0x43], forHandle: one.valueHandle)
            let moved = try await Self.next(on: other)
            XCTAssertEqual(moved, [0x1B] + Self.le(one.valueHandle) + [0x43])
            // With no EATT bearer left, the unenhanced bearer carries them to the client.
            await other.close()
            // A read on the unenhanced bearer follows the Disconnection Request on the link: once
            // it is answered, the server knows the bearer is gone.
            let read = try await p.readValue(handle: one.valueHandle)
            XCTAssertEqual(read, [0x43])
            let stream = await p.notifications(valueHandle: one.valueHandle)
            var it = stream.makeAsyncIterator()
            _ = await rig.manager.updateValue([0x44], forHandle: one.valueHandle)
            let plain = await it.next()
            XCTAssertEqual(plain, [0x44])
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testIndicationsGoOnABearerWithoutOneOutstanding() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let events = await rig.manager.events
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let bearers = try await p.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 2,
                                                       parameters: CreditBasedChannelParameters(mtu: 517, mps: 247, initialCredits: 8))
            let one = try XCTUnwrap(rig.handles[Self.first])
            let ok = try await Self.exchange([0x12] + Self.le(try XCTUnwrap(one.cccdHandle)) + [0x02, 0x00], on: bearers[0])
            XCTAssertEqual(ok, [0x13])
            // Two indications at once: each on its own bearer, both outstanding together.
            _ = await rig.manager.updateValue([1], forHandle: one.valueHandle)
            _ = await rig.manager.updateValue([2], forHandle: one.valueHandle)
            var got: [[UInt8]] = []
            for bearer in bearers {
                let pdu = try await Self.next(on: bearer)
                got.append(try XCTUnwrap(pdu))
            }
            XCTAssertEqual(Set(got), [[0x1D] + Self.le(one.valueHandle) + [1], [0x1D] + Self.le(one.valueHandle) + [2]])
            for bearer in bearers {
                try await bearer.send([0x1E])
                // Answered after the confirmation before it on the same bearer: the server has
                // taken both confirmations (and reported them) once both reads are answered.
                let read = try await Self.exchange([0x0A] + Self.le(one.valueHandle), on: bearer)
                XCTAssertEqual(read, [0x0B, 2])
            }
            var confirmed = 0
            for await event in events {
                if case .indicationConfirmed = event { confirmed += 1 }
                if confirmed == 2 { break }
            }
            XCTAssertEqual(confirmed, 2)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testWithoutOffersEnhancedATTSPSM0027IsRefusedAndFreeForTheApplication() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, offersEnhancedATT: false)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let db = try await p.discoverDatabase(readValues: true)
            XCTAssertEqual(db.offersEATT, false, "no Server Supported Features")
            do {
                _ = try await p.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1)
                XCTFail("nobody listens on 0x0027")
            } catch let BLEError.l2cap(.refused(result)) {
                XCTAssertEqual(result, .spsmNotSupported)
            }
            await rig.central.close()
            await rig.manager.close()
        }
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            do {
                _ = try await rig.manager.listenL2CAP(psm: ATTBearerID.enhancedATTPSM)
                XCTFail("0x0027 is Enhanced ATT's when the server offers it")
            } catch BLEError.busy {}
            await rig.central.close()
            await rig.manager.close()
        }
    }
}
