import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// The server's update path queues and drains a link in one access, for the
/// unenhanced bearer and, when the client opened Enhanced ATT bearers, for the bearer that
/// carries the updates (Vol 3 Part F §3.2.11). Under backpressure (`updateValueWaiting` waiting
/// for room in the bounded queue again and again) both must deliver the same values: every one,
/// once, whole and in order.
final class EATTUpdateParityWorldTests: XCTestCase {
    static let count = 100

    /// A value of the 20 octets a default ATT_MTU carries, saying which one it is.
    static func value(_ index: Int) -> [UInt8] {
        [UInt8(index & 0xFF), UInt8(index >> 8)] + (2..<20).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ index) }
    }

    static func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

    /// Sends `count` values with `updateValueWaiting`, each queued for the one central.
    static func send(_ manager: PeripheralManager, _ valueHandle: UInt16, _ world: VirtualWorld) -> Task<Void, any Error> {
        Task(executorPreference: world.clock.taskExecutor) {
            for i in 0..<count {
                let n = try await manager.updateValueWaiting(value(i), forHandle: valueHandle)
                XCTAssertEqual(n, 1, "value \(i) queued for the central")
            }
        }
    }

    func testUpdatesUnderBackpressureArriveTheSameOnAnEATTBearerAsOnTheUnenhancedOne() async throws {
        let expected = (0..<Self.count).map(Self.value)

        // Enhanced ATT: the client opened a bearer with a larger ATT_MTU, so the updates go on it.
        let enhanced: [[UInt8]] = try await VirtualWorld.run { world in
            let rig = try await EATTServerWorldTests.rig(world)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let bearers = try await p.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1,
                                                       parameters: CreditBasedChannelParameters(mtu: 517, mps: 247, initialCredits: 8))
            let bearer = try XCTUnwrap(bearers.first)
            let one = try XCTUnwrap(rig.handles[EATTServerWorldTests.first])
            let subscribed = try await EATTServerWorldTests.exchange([0x12] + Self.le(try XCTUnwrap(one.cccdHandle)) + [0x01, 0x00], on: bearer)
            XCTAssertEqual(subscribed, [0x13])
            let sender = Self.send(rig.manager, one.valueHandle, world)
            var got: [[UInt8]] = []
            var it = bearer.makeAsyncIterator()
            while got.count < Self.count, let pdu = try await it.next() {
                XCTAssertEqual(Array(pdu.prefix(3)), [0x1B] + Self.le(one.valueHandle), "a Handle Value Notification of the value")
                got.append(Array(pdu.dropFirst(3)))
            }
            try await sender.value
            await rig.central.close()
            await rig.manager.close()
            return got
        }
        XCTAssertEqual(enhanced, expected)

        // The same server and link security, no Enhanced ATT bearer: the unenhanced one carries them.
        let unenhanced: [[UInt8]] = try await VirtualWorld.run { world in
            let rig = try await EATTServerWorldTests.rig(world)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let one = try XCTUnwrap(rig.handles[EATTServerWorldTests.first])
            let values = await p.notifications(valueHandle: one.valueHandle)
            try await p.writeValue([0x01, 0x00], handle: try XCTUnwrap(one.cccdHandle))
            let sender = Self.send(rig.manager, one.valueHandle, world)
            var got: [[UInt8]] = []
            for await v in values {
                got.append(v)
                if got.count == Self.count { break }
            }
            try await sender.value
            await rig.central.close()
            await rig.manager.close()
            return got
        }
        XCTAssertEqual(unenhanced, expected)
    }
}
