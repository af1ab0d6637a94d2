import Foundation
import XCTest
import BLESystems

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
