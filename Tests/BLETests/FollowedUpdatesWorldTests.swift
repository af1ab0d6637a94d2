import BLE
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// `Peripheral.follow`: a subscription that survives a change of the server's database (Core
/// spec Vol 3 Part G §7.1), two hosts on the virtual radio in virtual time. The server removes
/// the subscribed service and adds it back at other handles; the client, told by Service
/// Changed, finds the characteristic again, subscribes again and gets the values from its new
/// handle; once the characteristic is gone for good the follow ends with the finder's error.
final class FollowedUpdatesWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFEE0)
    static let level = BluetoothUUID(0xFEE1)
    static func definition() -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: level, properties: [.read, .notify], permissions: [.read], value: [0]),
        ])
    }
    static let filler = GATTServiceDefinition(uuid: BluetoothUUID(0xFEF0), characteristics: [
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFEF1), properties: [.read, .notify], permissions: [.read], value: [0]),
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFEF2), properties: [.read], permissions: [.read], value: [0]),
    ])

    func testASubscriptionFollowsItsCharacteristicToItsNewHandles() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            var handles = try await rig.manager.add(Self.definition())
            let p = try await rig.central.connect(rig.address)
            try await p.exchangeMTU()
            let found = try await p.characteristic(Self.level)
            let c = try XCTUnwrap(found)
            try await p.enableUpdates(for: c)
            await p.completeCaching()   // Service Changed indications on
            let updates = await p.follow(c) { peripheral in
                guard let again = try await peripheral.characteristic(Self.level) else {
                    throw BLEError.invalidArgument("gone")
                }
                return again
            }
            var iterator = updates.makeAsyncIterator()
            let oldHandle = try XCTUnwrap(handles[Self.level]?.valueHandle)
            _ = await rig.manager.updateValue([1], forHandle: oldHandle)
            let firstUpdate = try await iterator.next()
            XCTAssertEqual(firstUpdate, .value([1]))

            // The service goes, a filler takes its handles, the service comes back after it.
            try await rig.manager.remove(handles)
            let filler = try await rig.manager.add(Self.filler)
            handles = try await rig.manager.add(Self.definition())
            let newHandle = try XCTUnwrap(handles[Self.level]?.valueHandle)
            XCTAssertNotEqual(newHandle, oldHandle)
            // One Service Changed per change (remove, add, add): each that covers the
            // characteristic finds it again; the last finding is at its new handle.
            var moved: GATTCharacteristic?
            while moved?.valueHandle != newHandle {
                switch try await iterator.next() {
                case let .resubscribed(c)?: moved = c
                case let other?: XCTFail("before resubscribing: \(other)")
                case nil: return XCTFail("ended")
                }
            }
            _ = await rig.manager.updateValue([2], forHandle: newHandle)
            var next: FollowedUpdate?
            repeat { next = try await iterator.next() } while next == .resubscribed(try XCTUnwrap(moved))
            XCTAssertEqual(next, .value([2]), "values continue from the new handle")
            XCTAssertFalse(filler.characteristics.isEmpty)

            // The server removes it for good: the follow ends with find's error.
            try await rig.manager.remove(handles)
            do {
                while let update = try await iterator.next() {
                    if case .value = update { XCTFail("no value after removal: \(update)") }
                }
                XCTFail("find throws once the characteristic is gone")
            } catch BLEError.invalidArgument {}
            try await p.disconnect()
            await rig.close()
        }
    }

    func testTheFollowEndsWithTheLinkAfterForwardingWhatCame() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let handles = try await rig.manager.add(Self.definition())
            let p = try await rig.central.connect(rig.address)
            let found = try await p.characteristic(Self.level)
            let c = try XCTUnwrap(found)
            try await p.enableUpdates(for: c)
            let updates = await p.follow(c) { _ in c }
            let handle = try XCTUnwrap(handles[Self.level]?.valueHandle)
            _ = await rig.manager.updateValue([7], forHandle: handle)
            var iterator = updates.makeAsyncIterator()
            let first = try await iterator.next()
            XCTAssertEqual(first, .value([7]))
            try await p.disconnect()
            let end = try await iterator.next()
            XCTAssertNil(end, "ends with the link")
            await rig.close()
        }
    }
}
