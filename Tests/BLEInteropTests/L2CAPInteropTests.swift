import BLE
import BLEWire
import Foundation
import XCTest

/// LE credit-based channels against Bumble over rootcanal, both ways: our central to
/// a Bumble CoC echo listener, a Bumble client to our listener; through the API and through
/// `ble l2cap`.
final class L2CAPInteropTests: XCTestCase {
    /// 64 KB in which every byte value occurs.
    static let file: [UInt8] = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) }
    /// What `l2cap_peer.py --role client` sends: byte i is i*7+3 mod 256.
    static func bumblePattern(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(($0 * 7 + 3) % 256) } }

    func peerAddress(_ peer: PeerProcess) throws -> DeviceAddress {
        try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random"))
    }

    func testOurChannelToABumbleEchoListenerMoves64KBByteForByte() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "server", "--echo", "--psm", "0x80",
                                                               "--mtu", "2048", "--mps", "247", "--credits", "8"], environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        let channel = try await p.openL2CAPChannel(psm: 0x80, parameters: CreditBasedChannelParameters(mtu: 2048, mps: 247, initialCredits: 8))
        XCTAssertEqual(channel.peerMTU, 2048)
        XCTAssertEqual(channel.info.remote.mps, 247)
        let opened = try peer.waitForEvent("channel", timeout: 10)
        XCTAssertEqual(opened.int("peer_mtu"), 2048)
        let file = Self.file
        let sender = Task {
            for offset in stride(from: 0, to: file.count, by: 2048) {
                try await channel.send(Array(file[offset..<min(file.count, offset + 2048)]))
            }
        }
        var echoed: [UInt8] = []
        for try await sdu in channel {
            echoed += sdu
            if echoed.count >= file.count { break }
        }
        try await sender.value
        XCTAssertEqual(echoed.count, file.count)
        XCTAssertTrue(echoed == file, "the echo differs from what was sent")
        await channel.close()
        let closed = try peer.waitForEvent("closed", timeout: 10)
        XCTAssertEqual(closed.int("bytes"), file.count)
        XCTAssertEqual(closed.string("sha256"), Self.sha256Hex(file))
        await central.close()
    }

    func testABumbleClientSendsToOurListener() async throws {
        let env = try InteropEnvironment.current()
        let address = InteropEnvironment.nextStaticRandomAddress()
        let own = try XCTUnwrap(BDAddress(string: address.description))
        let manager = try await PeripheralManager.open(spec: env.rootcanal, name: "SwiftCoC", address: .staticRandom(own))
        let listener = try await manager.listenL2CAP(psm: 0x81, parameters: CreditBasedChannelParameters(mtu: 1000, mps: 100, initialCredits: 4))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("SwiftCoC").build())
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "client", "--target", address.description, "--psm", "0x81",
                                                               "--mtu", "512", "--mps", "64", "--credits", "3",
                                                               "--size", "65536", "--sdu", "1000", "--hold", "1"], environment: env)
        var incoming = listener.makeAsyncIterator()
        let next = await incoming.next()
        let channel = try XCTUnwrap(next)
        XCTAssertEqual(channel.peerMTU, 512)
        XCTAssertEqual(channel.info.remote.mps, 64)
        var received: [UInt8] = []
        var sdus = 0
        for try await sdu in channel {
            received += sdu
            sdus += 1
        }
        XCTAssertEqual(sdus, 66, "65 SDUs of 1000 bytes and one of 536")
        XCTAssertTrue(received == Self.bumblePattern(65536), "\(received.count) bytes, not Bumble's 65536")
        let sent = try peer.waitForEvent("sent", timeout: 30)
        XCTAssertEqual(sent.string("sha256"), Self.sha256Hex(received))
        _ = try peer.waitForEvent("done", timeout: 30)
        await manager.close()
    }

    func testBleL2capConnectMovesAFileToABumbleEchoListenerAndBack() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "server", "--echo", "--psm", "0x80",
                                                               "--mtu", "2048", "--mps", "247", "--credits", "8"], environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("l2cap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.bin"), output = dir.appendingPathComponent("out.bin")
        try Data(Self.file).write(to: input)
        let ble = try BLETool.executableURL().path
        let command = "'\(ble)' l2cap connect \(peer.address)/random 0x80 --hci '\(env.rootcanal)' --mtu 2048 --linger 1 "
            + "< '\(input.path)' > '\(output.path)'"
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command], timeout: 90)
        XCTAssertEqual(result.status, 0, result.description)
        let echoed = try [UInt8](Data(contentsOf: output))
        XCTAssertEqual(echoed.count, Self.file.count, result.stderr)
        XCTAssertTrue(echoed == Self.file, "the file came back different")
        XCTAssertTrue(result.stderr.contains("channel to"), result.stderr)
        XCTAssertTrue(result.stderr.contains("sent 65536 bytes in 32 SDUs, received 65536 bytes"), result.stderr)
        let closed = try peer.waitForEvent("closed", timeout: 10)
        XCTAssertEqual(closed.int("bytes"), Self.file.count)
        print("ble l2cap connect ↔ Bumble echo: \(result.stderr)")
    }

    func testABumbleClientSendsToBleL2capListen() async throws {
        let env = try InteropEnvironment.current()
        let address = InteropEnvironment.nextStaticRandomAddress()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("l2cap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.bin")
        let ble = try BLETool.executableURL().path
        let command = "'\(ble)' l2cap listen 0x82 --once --address \(address) --hci '\(env.rootcanal)' --mtu 1024 --mps 247 --credits 8 "
            + "> '\(output.path)'"
        async let listening = ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command], timeout: 90)
        // No wait for the listener to start advertising: the client retries its connection for 20 s.
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "client", "--target", address.description, "--psm", "0x82",
                                                               "--mtu", "512", "--mps", "247", "--credits", "8",
                                                               "--size", "65536", "--sdu", "1024", "--hold", "1"], environment: env)
        _ = try peer.waitForEvent("done", timeout: 60)
        let result = try await listening
        XCTAssertEqual(result.status, 0, result.description)
        let received = try [UInt8](Data(contentsOf: output))
        XCTAssertTrue(received == Self.bumblePattern(65536), "\(received.count) bytes, not Bumble's 65536: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("received 65536 bytes in 64 SDUs"), result.stderr)
        print("Bumble client → ble l2cap listen: \(result.stderr)")
    }

    func testBleServeWithL2CAPEchoesABumbleClient() throws {
        let env = try InteropEnvironment.current()
        let serve = try ServeProcess(profile: "battery", name: "SwiftServe", arguments: ["--l2cap", "0x83"], environment: env)
        addTeardownBlock { serve.stop() }
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "client", "--target", serve.address.description, "--psm", "0x83",
                                                               "--mtu", "4096", "--mps", "247", "--credits", "8",
                                                               "--size", "20000", "--sdu", "2000", "--hold", "2"], environment: env)
        let sent = try peer.waitForEvent("sent", timeout: 30)
        let closed = try peer.waitForEvent("closed", timeout: 30)
        XCTAssertEqual(closed.int("bytes"), 20000, "everything came back")
        XCTAssertEqual(closed.string("sha256"), sent.string("sha256"))
        _ = try serve.waitFor("l2capChannel", timeout: 10)
        _ = try serve.waitFor("l2capClosed", timeout: 10)
    }

    /// bumble-bench (Bumble 0.0.236) in l2cap-server mode, receive scenario, fed by `ble l2cap
    /// connect`: 64 packets of 1024 bytes in its framing (a 2-octet big-endian length, then type
    /// 1, flags, sequence, timestamp), the last flagged; bumble-bench answers with its ACK.
    func testBumbleBenchReceivesFromBleL2capConnect() async throws {
        let env = try InteropEnvironment.current()
        let bench = env.python.deletingLastPathComponent().appendingPathComponent("bumble-bench")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: bench.path), "no bumble-bench next to \(env.python.path)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("l2cap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var packets: [UInt8] = []
        for i in 0..<64 {
            var p: [UInt8] = [1, i == 63 ? 1 : 0, UInt8(i), 0, 0, 0, 0, 0, 0, 0]
            p += [UInt8](repeating: 0, count: 1024 - p.count)
            packets += [UInt8(p.count >> 8), UInt8(p.count & 0xFF)] + p
        }
        let input = dir.appendingPathComponent("bench.bin"), ack = dir.appendingPathComponent("ack.bin")
        try Data(packets).write(to: input)
        // bumble-bench's peripheral always advertises as F1:F1:F1:F1:F1:F1 (random).
        let ble = try BLETool.executableURL().path
        let script = "'\(bench.path)' --mode l2cap-server --scenario receive peripheral \(env.bumbleTransport) > '\(dir.path)/bench.log' 2>&1 & B=$!; "
            + "sleep 4; '\(ble)' l2cap connect F1:F1:F1:F1:F1:F1/random 128 --mtu 1024 --hci '\(env.rootcanal)' < '\(input.path)' > '\(ack.path)'; "
            + "status=$?; sleep 1; kill -9 $B 2>/dev/null; wait; exit $status"
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], timeout: 90)
        XCTAssertTrue(result.stderr.contains("sent 65664 bytes in 65 SDUs"), result.description)
        XCTAssertEqual(try [UInt8](Data(contentsOf: ack)), [0, 6, 2, 1, 63, 0, 0, 0], "bumble-bench's ACK of the last packet")
        let log = (try? String(contentsOf: dir.appendingPathComponent("bench.log"), encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("Received last packet"), log)
        if let speed = log.split(separator: "\n").last(where: { $0.contains("Speed:") }) { print("bumble-bench: \(speed)") }
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }
}
