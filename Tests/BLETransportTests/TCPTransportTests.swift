#if canImport(Glibc)
import BLERuntime
import Glibc
import Foundation
import XCTest
import BLEHCI
@testable import BLETransport

final class TCPTransportTests: XCTestCase {
    /// Connects a TCPTransport to an in-test listener; returns the transport and the peer's fd.
    private func connected() async throws -> (TCPTransport, Int32, Int32) {
        let (listener, port) = try Peer.listen()
        let transport = try await TCPTransport.connect(host: "127.0.0.1", port: port)
        let peer = try Peer.accept(listener)
        XCTAssertEqual(transport.description, "tcp:127.0.0.1:\(port)")
        return (transport, listener, peer)
    }

    func testFramesSplitAtAwkwardBoundaries() async throws {
        let (transport, listener, peer) = try await connected()
        defer { close(peer); close(listener) }
        let stream = Sample.all.flatMap(\.bytes) + Sample.all.flatMap(\.bytes)
        // One byte, then a cut inside a header, inside a payload, across frames, and the rest.
        let cuts = [0, 1, 3, 9, 10, 17, 30, 31, 40, stream.count]
        // Each piece is written once the transport's reader has taken the one before, so the
        // pieces arrive as reads of their own (the cuts, not the kernel, decide the reads).
        let readerFD = transport.pump.fd
        async let written: Void = Peer.offPool {
            for (a, b) in zip(cuts, cuts.dropFirst()) {
                Peer.write(peer, Array(stream[a..<b]))
                XCTAssertTrue(Peer.waitTakenByReader(readerFD), "bytes \(a)..<\(b) not read")
            }
        }
        let frames = try await nextFrames(transport, 8)
        try await written
        XCTAssertEqual(frames, Sample.all + Sample.all)
        await transport.close()
    }

    func testSendWritesWholeFramesAndConcurrentSendsStayWhole() async throws {
        let (transport, listener, peer) = try await connected()
        defer { close(peer); close(listener) }
        try await transport.send(Sample.reset)
        let first = try await Peer.offPool { try Peer.read(peer, 4) }
        XCTAssertEqual(first, Sample.reset.bytes)

        // 8 tasks × 40 ACL frames of different lengths: the peer must be able to re-frame all.
        let expectedBytes = try await withThrowingTaskGroup(of: Int.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var total = 0
                    for i in 0..<40 {
                        let body = [UInt8](repeating: UInt8(t), count: 1 + (i * 37) % 300)
                        let l2 = [UInt8(body.count & 0xFF), UInt8(body.count >> 8)]
                        let f = H4Frame(type: .acl, payload: [UInt8(i), UInt8(t)] + l2 + body)
                        try await transport.send(f)
                        total += f.bytes.count
                    }
                    return total
                }
            }
            return try await group.reduce(0, +)
        }
        let received = try await Peer.offPool { try Peer.read(peer, expectedBytes) }
        var decoder = H4StreamDecoder()
        let frames = try decoder.push(received)
        XCTAssertEqual(frames.count, 320)
        for t in 0..<8 {
            let mine = frames.filter { $0.payload[1] == UInt8(t) }
            XCTAssertEqual(mine.map { $0.payload[0] }, (0..<40).map { UInt8($0) }, "order of sender \(t)")
            XCTAssertTrue(mine.allSatisfy { $0.payload.dropFirst(4).allSatisfy { $0 == UInt8(t) } })
        }
        await transport.close()
    }

    func testPeerCloseFinishesStreamWithError() async throws {
        let (transport, listener, peer) = try await connected()
        defer { close(listener) }
        Peer.write(peer, Sample.resetComplete.bytes)
        close(peer)
        let frames = try await nextFrames(transport, 1)
        XCTAssertEqual(frames, [Sample.resetComplete])
        let end = try await streamEnding(transport)
        XCTAssertEqual(end?.kind, .peerClosed)
        XCTAssertTrue(end?.message.contains("tcp:127.0.0.1:") == true, "\(String(describing: end))")
        do {
            try await transport.send(Sample.reset)
            XCTFail("send after peer close")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .closed)
        }
        await transport.close() // still fine after the transport died on its own
    }

    func testCloseFinishesStreamNormallyAndIsIdempotent() async throws {
        let (transport, listener, peer) = try await connected()
        defer { close(peer); close(listener) }
        // Whether the reader is already waiting when the transport closes or starts after, the
        // stream ends normally.
        let reader = Task { try await streamEnding(transport) }
        await transport.close()
        await transport.close()
        let end = try await reader.value
        XCTAssertNil(end)
        do {
            try await transport.send(Sample.reset)
            XCTFail("send after close")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .closed)
        }
        // The socket is closed: the peer sees EOF.
        XCTAssertTrue(Peer.waitReadable(peer, timeout: 2))
        var byte: UInt8 = 0
        XCTAssertEqual(read(peer, &byte, 1), 0)
    }

    func testDesyncClosesWithError() async throws {
        let (transport, listener, peer) = try await connected()
        defer { close(peer); close(listener) }
        // Good frames in the same read as the bad byte are still delivered before the error.
        Peer.write(peer, Sample.resetComplete.bytes + Sample.reset.bytes + [0xFF, 0x00])
        let frames = try await nextFrames(transport, 2)
        XCTAssertEqual(frames, [Sample.resetComplete, Sample.reset])
        let end = try await streamEnding(transport)
        XCTAssertEqual(end?.kind, .desync)
        XCTAssertTrue(end?.message.contains("0xff") == true, "\(String(describing: end))")
    }

    func testConnectionRefusedNamesHostAndPort() async throws {
        // A port that was just free: bind without listening, note it, close.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let port = Peer.boundPort(fd)
        close(fd)
        do {
            _ = try await openTransport(.tcp(host: "127.0.0.1", port: port))
            XCTFail("connected to a closed port")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .openFailed)
            XCTAssertEqual(e.errno, ECONNREFUSED)
            XCTAssertTrue(e.message.contains("127.0.0.1:\(port)"), e.message)
            XCTAssertTrue(e.message.contains("refused"), e.message)
        }
    }

    func testDroppedTransportReleasesItsSocket() async throws {
        let (listener, port) = try Peer.listen()
        defer { close(listener) }
        var transport: TCPTransport? = try await TCPTransport.connect(host: "127.0.0.1", port: port)
        let peer = try Peer.accept(listener)
        defer { close(peer) }
        XCTAssertNotNil(transport)
        transport = nil
        // No close() was called: deinit still stops the reader, which closes the socket.
        XCTAssertTrue(Peer.waitReadable(peer, timeout: 20))
        var byte: UInt8 = 0
        XCTAssertEqual(read(peer, &byte, 1), 0)
    }

    func testUnresolvableHost() async throws {
        do {
            _ = try await TCPTransport.connect(host: "no-such-host.invalid", port: 6402)
            XCTFail("resolved .invalid")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .openFailed)
            XCTAssertTrue(e.message.contains("cannot resolve host 'no-such-host.invalid'"), e.message)
        }
    }

    func testIPv6Loopback() async throws {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in6()
        addr.sin6_family = sa_family_t(AF_INET6)
        addr.sin6_addr = in6addr_loopback
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        guard ok == 0, listen(fd, 1) == 0 else { throw XCTSkip("no IPv6 loopback here") }
        var bound = sockaddr_in6()
        var len = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let spec = try TransportSpec.parse("tcp:[::1]:\(UInt16(bigEndian: bound.sin6_port))")
        let transport = try await openTransport(spec)
        let peer = try Peer.accept(fd)
        defer { close(peer) }
        Peer.write(peer, Sample.resetComplete.bytes)
        let frames = try await nextFrames(transport, 1)
        XCTAssertEqual(frames, [Sample.resetComplete])
        await transport.close()
    }
}
#endif
