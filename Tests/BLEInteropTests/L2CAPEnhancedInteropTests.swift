import BLE
import BLEWire
import Foundation
import XCTest

/// Enhanced credit-based channels (Core spec Vol 3 Part A §4.25–§4.28) against Bumble 0.0.236
/// over rootcanal, both ways: our central opening three channels at once to a Bumble echo
/// listener, a Bumble client opening two to our listener and reconfiguring them, and
/// `ble l2cap connect/listen --enhanced`. Bumble 0.0.236 opens and accepts enhanced channels
/// but has no reconfiguration procedure: it answers our request with Command Reject, and its
/// side of the reconfiguration here is the peer script's own.
final class L2CAPEnhancedInteropTests: XCTestCase {
    func peerAddress(_ peer: PeerProcess) throws -> DeviceAddress {
        try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random"))
    }

    /// What `l2cap_peer.py --role client --enhanced` sends on channel `index`.
    static func bumblePattern(_ size: Int, index: Int) -> [UInt8] { (0..<size).map { UInt8(($0 * 7 + 3 + index) % 256) } }

    func testThreeChannelsAtOnceToABumbleEchoListener() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "server", "--echo", "--psm", "0x84",
                                                               "--mtu", "1024", "--mps", "247", "--credits", "8"], environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        let parameters = CreditBasedChannelParameters(mtu: 1024, mps: 247, initialCredits: 8)
        let channels = try await p.openL2CAPChannels(psm: 0x84, count: 3, parameters: parameters)
        XCTAssertEqual(channels.count, 3)
        XCTAssertTrue(channels.allSatisfy { $0.mode == .enhancedCreditBased && $0.peerMTU == 1024 && $0.info.remote.mps == 247 })
        for _ in 0..<3 { _ = try peer.waitForEvent("channel", timeout: 10) }

        // 16 KB on each channel at once, each echoed back on its own channel.
        let size = 16 * 1024
        let data = (0..<3).map { k in L2CAPInteropTests.file.prefix(size).map { $0 &+ UInt8(k * 50) } }
        let senders = channels.enumerated().map { index, channel in
            Task {
                for offset in stride(from: 0, to: size, by: 1000) {
                    try await channel.send(Array(data[index][offset..<min(size, offset + 1000)]))
                }
            }
        }
        let readers = channels.map { channel in
            Task {
                var echoed: [UInt8] = []
                for try await sdu in channel {
                    echoed += sdu
                    if echoed.count >= size { break }
                }
                return echoed
            }
        }
        for (index, reader) in readers.enumerated() {
            let echoed = try await reader.value
            XCTAssertTrue(echoed == data[index], "channel \(index): the echo differs")
        }
        for sender in senders { try await sender.value }

        // Bumble 0.0.236 has no reconfiguration procedure: Command Reject, and the channel stays.
        do {
            try await channels[0].reconfigure(mtu: 2048)
            XCTFail("Bumble 0.0.236 does not reconfigure")
        } catch BLEError.l2cap(.rejected) {}
        let kept = await channels[0].currentInfo()
        XCTAssertEqual(kept?.local.mtu, 1024, "a rejected reconfiguration puts the old MTU back")
        try await channels[0].send([1, 2, 3])
        var it = channels[0].makeAsyncIterator()
        let back = try await it.next()
        XCTAssertEqual(back, [1, 2, 3])

        for channel in channels { await channel.close() }
        for _ in 0..<3 { _ = try peer.waitForEvent("closed", timeout: 10) }
        await central.close()
    }

    func testABumbleClientOpensTwoChannelsAndReconfiguresThem() async throws {
        let env = try InteropEnvironment.current()
        let address = InteropEnvironment.nextStaticRandomAddress()
        let own = try XCTUnwrap(BDAddress(string: address.description))
        let manager = try await PeripheralManager.open(spec: env.rootcanal, name: "SwiftECFC", address: .staticRandom(own))
        let listener = try await manager.listenL2CAP(psm: 0x85, parameters: CreditBasedChannelParameters(mtu: 1000, mps: 100, initialCredits: 4),
                                                     modes: [.enhancedCreditBased])
        try await manager.startAdvertising(AdvertisingData.Builder().localName("SwiftECFC").build())
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "client", "--target", address.description, "--psm", "0x85",
                                                               "--enhanced", "--count", "2", "--mtu", "512", "--mps", "64", "--credits", "3",
                                                               "--reconfigure-mtu", "800", "--reconfigure-mps", "80",
                                                               "--size", "20000", "--sdu", "500", "--hold", "1"], environment: env)
        var incoming = listener.makeAsyncIterator()
        var channels: [LECreditBasedChannel] = []
        for _ in 0..<2 {
            let next = await incoming.next()
            channels.append(try XCTUnwrap(next))
        }
        XCTAssertTrue(channels.allSatisfy { $0.mode == .enhancedCreditBased && $0.peerMTU == 512 && $0.info.remote.mps == 64 })
        let reconfigured = try peer.waitForEvent("reconfigured", timeout: 30)
        XCTAssertEqual(reconfigured.int("result"), 0, "our answer to Bumble's Credit Based Reconfigure Request")
        for channel in channels {
            let now = await channel.currentInfo()
            XCTAssertEqual(now?.remote.mtu, 800)
            XCTAssertEqual(now?.remote.mps, 80)
        }
        // Channel k of Bumble's request carries its own pattern; the two arrive interleaved.
        let ordered = channels.sorted { $0.info.remoteCID < $1.info.remoteCID }
        let readers = ordered.map { channel in
            Task {
                var received: [UInt8] = []
                for try await sdu in channel { received += sdu }
                return received
            }
        }
        for (index, reader) in readers.enumerated() {
            let received = try await reader.value
            XCTAssertTrue(received == Self.bumblePattern(20000, index: index), "channel \(index): \(received.count) bytes, not Bumble's 20000")
        }
        _ = try peer.waitForEvent("done", timeout: 30)
        await manager.close()
    }

    func testBleL2capConnectEnhancedMovesAFileThroughABumbleEcho() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "server", "--echo", "--psm", "0x86",
                                                               "--mtu", "2048", "--mps", "247", "--credits", "8"], environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ecfc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.bin"), output = dir.appendingPathComponent("out.bin")
        try Data(L2CAPInteropTests.file).write(to: input)
        let ble = try BLETool.executableURL().path
        let command = "'\(ble)' l2cap connect \(peer.address)/random 0x86 --enhanced --hci '\(env.rootcanal)' --mtu 2048 --linger 1 "
            + "< '\(input.path)' > '\(output.path)'"
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command], timeout: 90)
        XCTAssertEqual(result.status, 0, result.description)
        let echoed = try [UInt8](Data(contentsOf: output))
        XCTAssertTrue(echoed == L2CAPInteropTests.file, "\(echoed.count) bytes came back, not the file: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains(", enhanced"), result.stderr)
        XCTAssertTrue(result.stderr.contains("sent 65536 bytes in 32 SDUs, received 65536 bytes"), result.stderr)
        print("ble l2cap connect --enhanced ↔ Bumble echo: \(result.stderr)")
    }

    func testABumbleEnhancedClientSendsToBleL2capListenEnhanced() async throws {
        let env = try InteropEnvironment.current()
        let address = InteropEnvironment.nextStaticRandomAddress()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ecfc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.bin")
        let ble = try BLETool.executableURL().path
        let command = "'\(ble)' l2cap listen 0x87 --enhanced --once --address \(address) --hci '\(env.rootcanal)' --mtu 1024 --mps 247 --credits 8 "
            + "> '\(output.path)'"
        async let listening = ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command], timeout: 90)
        // The client retries its connection for 20 s while the listener starts.
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "client", "--target", address.description, "--psm", "0x87",
                                                               "--enhanced", "--count", "1", "--mtu", "512", "--mps", "247", "--credits", "8",
                                                               "--size", "65536", "--sdu", "1024", "--hold", "1"], environment: env)
        _ = try peer.waitForEvent("done", timeout: 60)
        let result = try await listening
        XCTAssertEqual(result.status, 0, result.description)
        let received = try [UInt8](Data(contentsOf: output))
        XCTAssertTrue(received == Self.bumblePattern(65536, index: 0), "\(received.count) bytes, not Bumble's 65536: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("enhanced credit-based only"), result.stderr)
        XCTAssertTrue(result.stderr.contains(", enhanced"), result.stderr)
        print("Bumble enhanced client → ble l2cap listen --enhanced: \(result.stderr)")
    }
}
