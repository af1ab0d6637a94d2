import BLEVirtual
import XCTest

/// `VirtualRadioServer`, with nothing but `import BLEVirtual`: a host that connects over TCP is
/// served as a controller on the radio, its session is reported when it starts and ends, and
/// closing the server ends `serve`.
final class VirtualRadioServerTests: XCTestCase {
    /// What the server reported, in order.
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    func testAHostOverTCPIsServedAsAControllerOnTheRadio() async throws {
        let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
        XCTAssertNotEqual(server.port, 0)
        XCTAssertEqual(server.description, "tcp:127.0.0.1:\(server.port)")
        let radio = VirtualRadio()
        let events = Events()
        let serving = Task {
            await server.serve(radio, address: { BDAddress(rawValue: 0x00_5A_B1_00_00_00 | UInt64($0)) }) { session in
                events.add("connected \(session.number) \(session.address)")
            } ended: { session, end in
                let how = switch end { case .hostClosed: "host closed"; case .hostFailed: "host failed"; case .radioClosed: "radio closed" }
                events.add("ended \(session.number) \(session.address): \(how)")
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
        for _ in 0..<500 where events.all.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(events.all, ["connected 1 00:5A:B1:00:00:01", "ended 1 00:5A:B1:00:00:01: host closed"])

        await server.close()
        await serving.value
        await radio.shutdown()
    }
}
