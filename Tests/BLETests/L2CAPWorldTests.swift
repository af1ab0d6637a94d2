import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Synchronization
import XCTest

/// LE credit-based channels between two of our hosts on the virtual radio, in virtual time
/// (Core spec Vol 3 Part A §4.22–§4.24, §10.2).
final class L2CAPWorldTests: XCTestCase {
    static let psm: UInt16 = 0x0080

    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let address: DeviceAddress
    }

    static func rig(_ world: VirtualWorld, central: HostConfiguration = HostConfiguration(),
                    peripheral: HostConfiguration = HostConfiguration()) async throws -> Rig {
        let (manager, device) = try await world.addPeripheralManager(name: "Pipe", configuration: peripheral)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Pipe").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        return Rig(central: c, manager: manager, address: DeviceAddress(device.address, type: .public))
    }

    static func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// 64 KB each way: SDUs of 65535, 1 and 4096 bytes from the central, the same back from the
    /// peripheral, byte for byte; a reader that stops reading stops the sender (its sends block
    /// once the credits we gave are spent) instead of growing a buffer.
    func testSDUStreamBothWaysWithBackpressure() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let big = CreditBasedChannelParameters(mtu: 65535, mps: 247, initialCredits: 4)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, parameters: big)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let channel = try await p.openL2CAPChannel(psm: Self.psm, parameters: big)
            XCTAssertEqual(channel.peerMTU, 65535)
            var incoming = listener.makeAsyncIterator()
            let served = try await XCTUnwrapAsync(await incoming.next())
            XCTAssertEqual(served.info.remoteCID, channel.info.localCID)
            XCTAssertEqual(served.info.localCID, channel.info.remoteCID)

            let sdus = [Self.pattern(65535, seed: 1), [0x42], Self.pattern(4096, seed: 7)]
            // Central → peripheral.
            let sender = Task(executorPreference: world.clock.taskExecutor) {
                for s in sdus { try await channel.send(s) }
            }
            var received: [[UInt8]] = []
            for try await sdu in served {
                received.append(sdu)
                if received.count == sdus.count { break }
            }
            try await sender.value
            XCTAssertEqual(received, sdus)

            // Peripheral → central.
            let back = Task(executorPreference: world.clock.taskExecutor) {
                for s in sdus.reversed() { try await served.send(s) }
            }
            var returned: [[UInt8]] = []
            for try await sdu in channel {
                returned.append(sdu)
                if returned.count == sdus.count { break }
            }
            try await back.value
            XCTAssertEqual(returned, sdus.reversed())

            // Backpressure: nobody reads on the peripheral; small SDUs (one K-frame each) stop
            // after the 4 credits it granted plus those it returns while reassembling (none
            // here), not after all 100.
            let sent = Atomic<Int>(0)
            let flood = Task(executorPreference: world.clock.taskExecutor) {
                for i in 0..<100 {
                    try await channel.send([UInt8(i)])
                    sent.add(1, ordering: .relaxed)
                }
            }
            try await world.clock.sleep(for: .seconds(5))
            XCTAssertTrue((1...4).contains(sent.load(ordering: .relaxed)), "sends block once the reader's credits (at most 4) are spent: \(sent.load(ordering: .relaxed))")
            // Reading gives credits back; the rest flows.
            var got: [UInt8] = []
            for try await sdu in served {
                got += sdu
                if got.count == 100 { break }
            }
            try await flood.value
            XCTAssertEqual(got, (0..<100).map { UInt8($0) })

            // A clean close ends the other side's sequence.
            await channel.close()
            var after: [[UInt8]] = []
            for try await sdu in served { after.append(sdu) }
            XCTAssertEqual(after, [])
            do {
                try await channel.send([1])
                XCTFail("a closed channel sends nothing")
            } catch BLEError.l2cap(.closed) {}
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// Cancelling a send that waits for credits ends it at once with CancellationError and
    /// withdraws its SDU (none of its K-frames had gone out): the peer never gets it, and the
    /// next SDU follows the ones before it.
    func testACancelledSendWithdrawsItsSDU() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let one = CreditBasedChannelParameters(mtu: 100, mps: 23, initialCredits: 1)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, parameters: one)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let channel = try await p.openL2CAPChannel(psm: Self.psm, parameters: one)
            var incoming = listener.makeAsyncIterator()
            let served = try await XCTUnwrapAsync(await incoming.next())
            try await channel.send([1])   // the peripheral's one credit, held while it is unread
            let finished = Atomic<Bool>(false)
            let blocked = Task(executorPreference: world.clock.taskExecutor) {
                defer { finished.store(true, ordering: .relaxed) }
                try await channel.send([2])
            }
            try await world.clock.sleep(for: .seconds(1))
            XCTAssertFalse(finished.load(ordering: .relaxed), "no credit: the send waits")
            blocked.cancel()
            try await world.clock.sleep(for: .seconds(1))
            XCTAssertTrue(finished.load(ordering: .relaxed), "a cancelled send returns at once")
            let next = Task(executorPreference: world.clock.taskExecutor) { try await channel.send([3]) }
            var it = served.makeAsyncIterator()
            let first = try await it.next()
            let second = try await it.next()
            XCTAssertEqual(first, [1])
            XCTAssertEqual(second, [3], "the cancelled SDU was withdrawn")
            try await next.value
            do {
                try await blocked.value
                XCTFail("a cancelled send throws")
            } catch is CancellationError {}
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testRefusalsAndSecurityRaisedOnDemand() async throws {
        try await VirtualWorld.run { world in
            var central = HostConfiguration()
            central.security.raisesSecurityOnDemand = false
            let rig = try await Self.rig(world, central: central)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            do {
                _ = try await p.openL2CAPChannel(psm: 0x0081)
                XCTFail("nobody listens on 0x0081")
            } catch BLEError.l2cap(.refused(.spsmNotSupported)) {}
            // The listener lives as long as its sequence is held.
            let listener = try await rig.manager.listenL2CAP(psm: 0x0082, security: L2CAPSecurityRequirement(level: .encrypted))
            do {
                _ = try await p.openL2CAPChannel(psm: 0x0082)
                XCTFail("the listener needs encryption")
            } catch BLEError.l2cap(.refused(.insufficientAuthentication)) {}
            do {
                _ = try await p.openL2CAPChannel(psm: 0x0082, parameters: CreditBasedChannelParameters(mtu: 22, mps: 23, initialCredits: 1))
                XCTFail("MTU 22 is below the minimum")
            } catch BLEError.invalidArgument {}
            do {
                _ = try await p.openL2CAPChannel(psm: 0x0100)
                XCTFail("0x0100 is no LE SPSM")
            } catch BLEError.invalidArgument {}
            await listener.stop()
            do {
                _ = try await p.openL2CAPChannel(psm: 0x0082)
                XCTFail("the listener stopped")
            } catch BLEError.l2cap(.refused(.spsmNotSupported)) {}
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testAListenerThatNeedsEncryptionGetsItByPairingOnDemand() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, security: L2CAPSecurityRequirement(level: .encrypted))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let channel = try await p.openL2CAPChannel(psm: Self.psm)
            let level = await p.securityLevel
            XCTAssertEqual(level, .encrypted, "the refusal made the central pair, then the channel opened")
            var incoming = listener.makeAsyncIterator()
            let served = try await XCTUnwrapAsync(await incoming.next())
            try await channel.send(Array("hello".utf8))
            var it = served.makeAsyncIterator()
            let first = try await it.next()
            XCTAssertEqual(first, Array("hello".utf8))
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testLinkLossEndsChannelsWithTheDisconnect() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let a = try await p.openL2CAPChannel(psm: Self.psm)
            let b = try await p.openL2CAPChannel(psm: Self.psm)
            XCTAssertNotEqual(a.info.localCID, b.info.localCID)
            var incoming = listener.makeAsyncIterator()
            let servedA = try await XCTUnwrapAsync(await incoming.next())
            _ = try await XCTUnwrapAsync(await incoming.next())
            // Two channels interleave on one link.
            try await b.send([2])
            try await a.send([1])
            var itA = servedA.makeAsyncIterator()
            let one = try await itA.next()
            XCTAssertEqual(one, [1])
            try await p.disconnect()
            do {
                _ = try await itA.next()
                XCTFail("the channel ends with the link")
            } catch BLEError.disconnected {}
            do {
                for try await _ in a {}
                XCTFail("the channel ends with the link")
            } catch BLEError.disconnected {}
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

func XCTUnwrapAsync<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) async throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}
