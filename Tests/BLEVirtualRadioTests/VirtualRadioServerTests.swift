import BLETestSupport
import BLEVirtual
import XCTest
import Synchronization

/// `VirtualRadioServer`, with nothing but `import BLEVirtual`: a host that connects over TCP is
/// served as a controller on the radio, its session is reported when it starts and ends, and
/// closing the server ends `serve`.
final class VirtualRadioServerTests: XCTestCase {
    /// What the server reported, in order.
    final class Events: @unchecked Sendable {
        private let lock = Mutex(())
        private var lines: [String] = []
        func add(_ line: String) { lock.withLock { _ in lines.append(line) } }
        var all: [String] { lock.withLock { _ in lines } }
    }

    func testAHostOverTCPIsServedAsAControllerOnTheRadio() async throws {
        let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
        XCTAssertNotEqual(server.port, 0)
        XCTAssertEqual(server.description, "tcp:127.0.0.1:\(server.port)")
        let radio = VirtualRadio()
        let events = Events()
        let (endedStream, endings) = AsyncStream.makeStream(of: Void.self)
        let serving = Task {
            await server.serve(radio, address: { BDAddress(rawValue: 0x00_5A_B1_00_00_00 | UInt64($0)) }) { session in
                events.add("connected \(session.number) \(session.address)")
            } ended: { session, end in
                let how = switch end { case .hostClosed: "host closed"; case .hostFailed: "host failed"; case .radioClosed: "radio closed" }
                events.add("ended \(session.number) \(session.address): \(how)")
                endings.yield()
            }
        }

        // A host opens the spec the server prints, and its HCI_Reset is answered by a controller.
        let host = try await TransportFactory.open(spec: server.description)
        try await host.send(H4Frame(type: .command, payload: [0x03, 0x0C, 0x00]))
        var incoming = host.incoming.makeAsyncIterator()
        let answer = try await incoming.next()
        XCTAssertEqual(answer?.type, .event)
        XCTAssertEqual(Array(answer?.payload.prefix(1) ?? []), [0x0E], "Command Complete")
        XCTAssertEqual(Array(answer?.payload.dropFirst(3).prefix(3) ?? []), [0x03, 0x0C, 0x00], "HCI_Reset, Success")
        XCTAssertEqual(events.all, ["connected 1 00:5A:B1:00:00:01"])

        await host.close()
        // The session's end is reported (an event, within a bound).
        _ = await result(within: .seconds(5)) { for await _ in endedStream { return } }
        XCTAssertEqual(events.all, ["connected 1 00:5A:B1:00:00:01", "ended 1 00:5A:B1:00:00:01: host closed"])

        await server.close()
        await serving.value
        await radio.shutdown()
    }

    static let reset = H4Frame(type: .command, payload: [0x03, 0x0C, 0x00])
    static let address: @Sendable (Int) -> BDAddress = { BDAddress(rawValue: 0x00_5A_B1_00_00_00 | UInt64($0)) }

    /// Whether `host`'s stream ends (the server closed its connection) within `bound`.
    static func streamEnds(_ host: any HCITransport, within bound: Duration = .seconds(10)) async -> Bool {
        await result(within: bound) {
            do { for try await _ in host.incoming {} } catch {}
            return true
        } ?? false
    }

    /// `close()` closes the connections of the hosts it serves: their streams end, their
    /// sessions are reported ended, and `serve` returns.
    func testCloseEndsTheSessionsOfConnectedHosts() async throws {
        let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
        let radio = VirtualRadio()
        let address = Self.address
        let (connected, connections) = AsyncStream.makeStream(of: Int.self)
        let serving = Task { await server.serve(radio, address: address) { _ = connections.yield($0.number) } }
        let host = try await TransportFactory.open(spec: server.description)
        var numbers = connected.makeAsyncIterator()
        let first = await numbers.next()
        XCTAssertEqual(first, 1)
        await server.close()
        let ended = await Self.streamEnds(host)
        XCTAssertTrue(ended, "the host's connection is closed")
        let returned = await result(within: .seconds(10)) { await serving.value; return true }
        XCTAssertEqual(returned, true, "serve returns")
        await host.close()
        await radio.shutdown()
    }

    /// Cancelling the task that runs `serve` closes the server: a host is not accepted and left
    /// unanswered afterwards.
    func testCancellingServeClosesTheServer() async throws {
        let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
        let radio = VirtualRadio()
        let address = Self.address
        let serving = Task { await server.serve(radio, address: address) }
        serving.cancel()
        await serving.value
        do {
            let host = try await TransportFactory.open(spec: server.description)
            let ended = await Self.streamEnds(host)
            XCTAssertTrue(ended, "a host connecting after serve was cancelled is not left hanging")
            await host.close()
        } catch {}  // refused: the listener is closed
        await radio.shutdown()
    }

    /// Two `serve` loops on one server number their hosts together: no two hosts get one address.
    func testTwoServeLoopsNeverGiveTwoHostsOneAddress() async throws {
        let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
        let radio = VirtualRadio()
        let address = Self.address
        let (given, addresses) = AsyncStream.makeStream(of: BDAddress.self)
        let a = Task { await server.serve(radio, address: address) { _ = addresses.yield($0.address) } }
        let b = Task { await server.serve(radio, address: address) { _ = addresses.yield($0.address) } }
        let first = try await TransportFactory.open(spec: server.description)
        let second = try await TransportFactory.open(spec: server.description)
        let two: [BDAddress] = await result(within: .seconds(10)) { () async -> [BDAddress] in
            var got: [BDAddress] = []
            for await address in given.prefix(2) { got.append(address) }
            return got
        } ?? []
        XCTAssertEqual(Set(two).count, 2, "hosts given one address: \(two)")
        await first.close()
        await second.close()
        await server.close()
        await a.value
        await b.value
        await radio.shutdown()
    }

    /// A server let go without `close()` stops listening.
    func testAServerLetGoStopsListening() async throws {
        let port = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0).port
        // The listener closes on a task of its own (no event to wait on): try again until the
        // connection is refused, within a bound.
        let refused = await result(within: .seconds(10)) {
            while true {
                guard let host = try? await TransportFactory.open(spec: "tcp:127.0.0.1:\(port)") else { return true }
                await host.close()
                await Task.yield()
            }
        }
        XCTAssertEqual(refused, true, "a released VirtualRadioServer still accepts connections on port \(port)")
    }
}
