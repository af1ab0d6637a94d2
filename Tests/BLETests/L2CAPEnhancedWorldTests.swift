import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Enhanced credit-based channels between two of our hosts on the virtual radio, in virtual
/// time (Core spec Vol 3 Part A §4.25–§4.28, §10.2): five channels from one request,
/// SDUs interleaved on all of them, reconfiguration, a listener's modes and security.
final class L2CAPEnhancedWorldTests: XCTestCase {
    static let psm: UInt16 = 0x0090

    func testFiveChannelsFromOneRequestCarryInterleavedSDUs() async throws {
        try await VirtualWorld.run { world in
            let rig = try await L2CAPWorldTests.rig(world)
            let parameters = CreditBasedChannelParameters(mtu: 2000, mps: 64, initialCredits: 3)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, parameters: parameters)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let channels = try await p.openL2CAPChannels(psm: Self.psm, count: 5, parameters: parameters)
            XCTAssertEqual(channels.count, 5)
            XCTAssertTrue(channels.allSatisfy { $0.mode == .enhancedCreditBased && $0.peerMTU == 2000 })
            XCTAssertEqual(Set(channels.map(\.info.localCID)).count, 5)
            var incoming = listener.makeAsyncIterator()
            var served: [UInt16: LECreditBasedChannel] = [:]
            for _ in 0..<5 {
                let s = try await XCTUnwrapAsync(await incoming.next())
                XCTAssertEqual(s.mode, .enhancedCreditBased)
                served[s.info.remoteCID] = s
            }
            XCTAssertEqual(Set(served.keys), Set(channels.map(\.info.localCID)))

            // Every channel sends at once: 1-byte, MPS-sized and multi-K-frame SDUs, each
            // reassembled on its own channel with only 3 credits each.
            let sdus: [[UInt8]] = [[0x42], L2CAPWorldTests.pattern(62, seed: 3), L2CAPWorldTests.pattern(2000, seed: 9)]
            let senders = channels.enumerated().map { index, channel in
                Task(executorPreference: world.clock.taskExecutor) {
                    for sdu in sdus { try await channel.send(sdu.map { $0 &+ UInt8(index) }) }
                }
            }
            for (index, channel) in channels.enumerated() {
                let s = try XCTUnwrap(served[channel.info.localCID])
                var got: [[UInt8]] = []
                for try await sdu in s {
                    got.append(sdu)
                    if got.count == sdus.count { break }
                }
                XCTAssertEqual(got, sdus.map { $0.map { $0 &+ UInt8(index) } }, "channel \(index)")
            }
            for sender in senders { try await sender.value }

            // Closing one leaves the others open.
            await channels[0].close()
            let first = try XCTUnwrap(served[channels[0].info.localCID])
            for try await _ in first { XCTFail("nothing more on a closed channel") }
            try await channels[1].send([7])
            let second = try XCTUnwrap(served[channels[1].info.localCID])
            var it = second.makeAsyncIterator()
            let seven = try await it.next()
            XCTAssertEqual(seven, [7])
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testReconfigurationRaisesTheMTUBothSidesSee() async throws {
        try await VirtualWorld.run { world in
            let rig = try await L2CAPWorldTests.rig(world)
            let small = CreditBasedChannelParameters(mtu: 100, mps: 64, initialCredits: 4)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, parameters: small)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let pair = try await p.openL2CAPChannels(psm: Self.psm, count: 2, parameters: small)
            var incoming = listener.makeAsyncIterator()
            let servedA = try await XCTUnwrapAsync(await incoming.next())
            let servedB = try await XCTUnwrapAsync(await incoming.next())
            let (a, b) = servedA.info.remoteCID == pair[0].info.localCID ? (servedA, servedB) : (servedB, servedA)
            do {
                try await a.send(Array(repeating: 1, count: 500))
                XCTFail("500 bytes exceed the central's MTU of 100")
            } catch BLEError.invalidArgument {}

            // The central takes SDUs of 1000 and K-frames of 128 on both channels now.
            try await LECreditBasedChannel.reconfigure(pair, mtu: 1000, mps: 128)
            let central = await pair[1].currentInfo()
            XCTAssertEqual(central?.local.mtu, 1000)
            XCTAssertEqual(central?.local.mps, 128)
            let peripheral = await b.currentInfo()
            XCTAssertEqual(peripheral?.remote.mtu, 1000)
            XCTAssertEqual(peripheral?.remote.mps, 128)
            XCTAssertEqual(pair[1].info.local.mtu, 100, "info keeps what the channel opened with")
            let big = L2CAPWorldTests.pattern(1000, seed: 5)
            let sender = Task(executorPreference: world.clock.taskExecutor) { try await a.send(big) }
            var it = pair[0].makeAsyncIterator()
            let got = try await it.next()
            XCTAssertEqual(got, big)
            try await sender.value

            // One channel may lower its MPS; the MTU never goes down; several channels keep theirs.
            try await pair[0].reconfigure(mtu: 1000, mps: 64)
            let lowered = await a.currentInfo()
            XCTAssertEqual(lowered?.remote.mps, 64)
            do {
                try await pair[0].reconfigure(mtu: 999)
                XCTFail("the MTU may not get smaller")
            } catch BLEError.invalidArgument {}
            do {
                try await LECreditBasedChannel.reconfigure(pair, mtu: 1000, mps: 100)
                XCTFail("the MPS of several channels may not get smaller")
            } catch BLEError.invalidArgument {}
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testAListenersModesAndAnLEChannelThatCannotBeReconfigured() async throws {
        try await VirtualWorld.run { world in
            var central = HostConfiguration()
            central.security.raisesSecurityOnDemand = false
            let rig = try await L2CAPWorldTests.rig(world, central: central)
            let leOnly = try await rig.manager.listenL2CAP(psm: 0x91, modes: [.leCreditBased])
            let enhancedOnly = try await rig.manager.listenL2CAP(psm: 0x92, modes: [.enhancedCreditBased])
            let secure = try await rig.manager.listenL2CAP(psm: 0x93, security: L2CAPSecurityRequirement(level: .encrypted))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            do {
                _ = try await p.openL2CAPChannels(psm: 0x91, count: 2)
                XCTFail("the listener takes LE credit-based channels only")
            } catch BLEError.l2cap(.refused(.spsmNotSupported)) {}
            do {
                _ = try await p.openL2CAPChannel(psm: 0x92)
                XCTFail("the listener takes enhanced channels only")
            } catch BLEError.l2cap(.refused(.spsmNotSupported)) {}
            do {
                _ = try await p.openL2CAPChannels(psm: 0x93, count: 3)
                XCTFail("the listener needs encryption")
            } catch BLEError.l2cap(.refused(.insufficientAuthentication)) {}
            for (count, parameters) in [(0, CreditBasedChannelParameters.standard), (6, .standard), (1, .init(mtu: 63, mps: 64, initialCredits: 1))] {
                do {
                    _ = try await p.openL2CAPChannels(psm: 0x92, count: count, parameters: parameters)
                    XCTFail("\(count) channels, \(parameters)")
                } catch BLEError.invalidArgument {}
            }
            let le = try await p.openL2CAPChannel(psm: 0x91)
            XCTAssertEqual(le.mode, .leCreditBased)
            do {
                try await le.reconfigure(mtu: 5000)
                XCTFail("an LE credit-based channel has no reconfiguration")
            } catch BLEError.invalidArgument {}
            let enhanced = try await p.openL2CAPChannels(psm: 0x92, count: 1)
            XCTAssertEqual(enhanced.first?.mode, .enhancedCreditBased)
            _ = (leOnly, enhancedOnly, secure)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testSecurityIsRaisedOnDemandAndLinkLossEndsEveryChannel() async throws {
        try await VirtualWorld.run { world in
            let rig = try await L2CAPWorldTests.rig(world)
            let listener = try await rig.manager.listenL2CAP(psm: Self.psm, security: L2CAPSecurityRequirement(level: .encrypted))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let channels = try await p.openL2CAPChannels(psm: Self.psm, count: 3)
            XCTAssertEqual(channels.count, 3)
            let level = await p.securityLevel
            XCTAssertEqual(level, .encrypted, "the refusal made the central pair, then the channels opened")
            var incoming = listener.makeAsyncIterator()
            for _ in 0..<3 { _ = try await XCTUnwrapAsync(await incoming.next()) }
            try await p.disconnect()
            for channel in channels {
                do {
                    for try await _ in channel {}
                    XCTFail("the channel ends with the link")
                } catch BLEError.disconnected {}
            }
            await rig.central.close()
            await rig.manager.close()
        }
    }
}
