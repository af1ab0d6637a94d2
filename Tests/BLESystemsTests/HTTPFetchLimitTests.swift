import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// The echo server's http fetches hold at most the size limit in memory: a response announcing
/// more is refused at its headers, and a body that grows past the limit is cancelled as it
/// does, instead of being downloaded whole first. On a loopback server, in real time.
final class HTTPFetchLimitTests: XCTestCase {
    func serve(_ respond: @escaping @Sendable (Int32, LoopbackHTTPServer) -> Void) throws -> LoopbackHTTPServer {
        let server = try LoopbackHTTPServer(respond)
        addTeardownBlock { server.stop() }
        return server
    }

    func fetch(_ url: String, limit: Int = 1000, timeout: TimeInterval = 20) async -> Result<[UInt8], FetchError> {
        var fetcher = ResourceFetcher(maximumSize: limit)
        fetcher.timeout = timeout
        do {
            return .success(try await fetcher.fetch(url))
        } catch {
            return .failure(error)
        }
    }

    func testAResponseWithinTheLimitIsReturned() async throws {
        let server = try serve { client, server in
            server.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: 1000), to: client)
        }
        let result = await fetch(server.url)
        XCTAssertEqual(try result.get(), [UInt8](repeating: 0x41, count: 1000))
    }

    func testAnErrorStatusIsReported() async throws {
        let server = try serve { client, server in
            server.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), to: client)
        }
        let result = await fetch(server.url)
        XCTAssertEqual(result, .failure(.httpStatus(404, url: server.url)))
    }

    /// Content-Length over the limit: refused at the headers, though the body never comes.
    func testAnAnnouncedLengthOverTheLimitIsRefusedAtTheHeaders() async throws {
        let server = try serve { client, server in
            server.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n".utf8), to: client)
            LoopbackHTTPServer.waitForClose(client)
        }
        // The server never sends the body and waits for the client to close: a fetch that waited
        // for the body would end at its timeout with a timeout error, not `.tooLarge`. The long
        // timeout is only the bound; nothing here measures real time.
        let result = await fetch(server.url, timeout: 120)
        XCTAssertEqual(result, .failure(.tooLarge(size: 10_000_000, limit: 1000)))
    }

    /// No length, and a body that never ends: cancelled once past the limit, after at most a
    /// few socket buffers have been sent.
    func testABodyGrowingPastTheLimitIsCancelled() async throws {
        let server = try serve { client, server in
            guard server.send(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8), to: client) else { return }
            let chunk = [UInt8](repeating: 0x42, count: 16 * 1024)
            while server.send(chunk, to: client) {}
        }
        let result = await fetch(server.url, limit: 100_000)
        guard case let .failure(.tooLarge(size, limit)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(limit, 100_000)
        XCTAssertGreaterThan(size, 100_000)
        XCTAssertLessThan(size, 100_000 + 1024 * 1024, "stopped within one read of the limit")
    }
}

/// The test server itself: a stopped server still answering a client must not take the next
/// server's connections (it once did, when its descriptor was reused by the next listener).
final class LoopbackHTTPServerTests: XCTestCase {
    func testAStoppedServerDoesNotAnswerTheNextServersClients() async throws {
        let release = DispatchSemaphore(value: 0)
        let first = try LoopbackHTTPServer { client, server in
            release.wait()
            server.send(Array("HTTP/1.1 500 Old Server\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), to: client)
        }
        // A client that the first server holds in `respond` while it is stopped.
        let held = Thread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = first.port.bigEndian
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            _ = Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var byte: UInt8 = 0
            while recv(fd, &byte, 1, 0) > 0 {}
            close(fd)
        }
        held.start()
        await first.connectionsAccepted.wait("the first server holding a client", within: .seconds(10)) { $0 == 1 }
        first.stop()
        let second = try LoopbackHTTPServer { client, server in
            server.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), to: client)
        }
        defer { second.stop() }
        release.signal()
        var fetcher = ResourceFetcher(maximumSize: 1000)
        fetcher.timeout = 20
        for _ in 0..<3 {
            do {
                _ = try await fetcher.fetch(second.url)
                XCTFail("a 404 is an error")
            } catch {
                XCTAssertEqual(error, .httpStatus(404, url: second.url))
            }
        }
    }
}
