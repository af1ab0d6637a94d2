import BLE
import BLERuntime
import BLEWire
import BLESystems
import BLEVirtual
import XCTest
import BLETestSupport

/// `ble bench` against itself on the virtual radio, in virtual time: every mode and scenario,
/// both ways, each side the way the command runs it (its own controller, bumble-bench's default
/// addresses, the pauses around the run).
final class BenchVirtualRadioTests: XCTestCase {
    /// One pairing's outcome: each side's result and lines.
    struct Outcome: Sendable {
        var central: BenchResult
        var peripheral: BenchResult
        var centralLines: [String]
        var peripheralLines: [String]
    }

    /// Runs `peripheral` and `central` on two controllers of one virtual radio.
    func pair(_ central: BenchConfiguration, _ peripheral: BenchConfiguration) async throws -> Outcome {
        try await VirtualWorld.run { world in
            let pLog = Collected<String>(), cLog = Collected<String>()
            let pDevice = await world.radio.addDevice()
            let served = Task(executorPreference: world.clock.taskExecutor) {
                try await peripheral.run(transport: pDevice.transport, clock: world.clock) { pLog.append($0) }
            }
            let cDevice = await world.radio.addDevice()
            let c: BenchResult
            do {
                c = try await central.run(transport: cDevice.transport, clock: world.clock) { cLog.append($0) }
            } catch {
                served.cancel()
                throw error
            }
            let p = try await served.value
            return Outcome(central: c, peripheral: p, centralLines: cLog.all, peripheralLines: pLog.all)
        }
    }

    func configurations(central: (BenchConfiguration.Mode, BenchScenario), peripheral: (BenchConfiguration.Mode, BenchScenario),
                        count: Int = 20, size: Int = 200) -> (BenchConfiguration, BenchConfiguration) {
        var c = BenchConfiguration(role: .central)
        (c.mode, c.run.scenario) = central
        var p = BenchConfiguration(role: .peripheral)
        (p.mode, p.run.scenario) = peripheral
        c.run.packetCount = count
        c.run.packetSize = size
        p.run.packetCount = count
        p.run.packetSize = size
        return (c, p)
    }

    /// The sender's run ended with the ack; the receiver had every packet, in order.
    func assertSendReceive(_ senderResult: BenchResult, _ receiverResult: BenchResult, count: Int, _ lines: [String],
                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(senderResult.runs, 1, file: file, line: line)
        XCTAssertEqual(senderResult.speeds.count, 1, file: file, line: line)
        XCTAssertGreaterThan(senderResult.speeds.first ?? 0, 0, file: file, line: line)
        XCTAssertEqual(receiverResult.packetsReceived, count, file: file, line: line)
        XCTAssertEqual(receiverResult.outOfOrder, 0, file: file, line: line)
        XCTAssertEqual(receiverResult.invalidPackets, 0, file: file, line: line)
        XCTAssertEqual(receiverResult.receivedSpeeds.count, 1, file: file, line: line)
        XCTAssertTrue(lines.contains { $0.hasPrefix("Speed: instant=") }, "the receiver prints speeds: \(lines.suffix(5))", file: file, line: line)
    }

    func assertPingPong(_ pingResult: BenchResult, _ pongResult: BenchResult, count: Int, _ lines: [String],
                        file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(pingResult.runs, 1, file: file, line: line)
        XCTAssertEqual(pingResult.roundTrips.first?.count, count, "an RTT per packet", file: file, line: line)
        XCTAssertEqual(pingResult.outOfOrder, 0, file: file, line: line)
        XCTAssertEqual(pongResult.packetsReceived, count, file: file, line: line)
        XCTAssertTrue(lines.contains { $0.hasPrefix("@@@ RTTs: min=") }, "ping prints the RTTs: \(lines.suffix(5))", file: file, line: line)
    }

    // MARK: GATT

    func testGATTClientSendsToGATTServer() async throws {
        let (c, p) = configurations(central: (.gattClient, .send), peripheral: (.gattServer, .receive))
        let o = try await pair(c, p)
        assertSendReceive(o.central, o.peripheral, count: 20, o.peripheralLines)
        XCTAssertTrue(o.centralLines.contains { $0.hasPrefix("@@@ Received ACK. Speed: average=") }, "\(o.centralLines.suffix(5))")
        XCTAssertTrue(o.centralLines.contains("### Connecting to F1:F1:F1:F1:F1:F1..."), "bumble-bench's default peer")
    }

    func testGATTServerSendsToGATTClient() async throws {
        let (c, p) = configurations(central: (.gattClient, .receive), peripheral: (.gattServer, .send))
        let o = try await pair(c, p)
        assertSendReceive(o.peripheral, o.central, count: 20, o.centralLines)
    }

    func testGATTClientPingsGATTServer() async throws {
        let (c, p) = configurations(central: (.gattClient, .ping), peripheral: (.gattServer, .pong))
        let o = try await pair(c, p)
        assertPingPong(o.central, o.peripheral, count: 20, o.centralLines)
    }

    func testGATTServerPingsGATTClient() async throws {
        let (c, p) = configurations(central: (.gattClient, .pong), peripheral: (.gattServer, .ping))
        let o = try await pair(c, p)
        assertPingPong(o.peripheral, o.central, count: 20, o.peripheralLines)
    }

    /// The roles swapped: the central serves the speed service, the peripheral is its GATT client.
    func testPeripheralGATTClientSendsToCentralGATTServer() async throws {
        let (c, p) = configurations(central: (.gattServer, .receive), peripheral: (.gattClient, .send))
        let o = try await pair(c, p)
        assertSendReceive(o.peripheral, o.central, count: 20, o.centralLines)
    }

    func testCentralGATTServerPingsPeripheralGATTClient() async throws {
        let (c, p) = configurations(central: (.gattServer, .ping), peripheral: (.gattClient, .pong))
        let o = try await pair(c, p)
        assertPingPong(o.central, o.peripheral, count: 20, o.centralLines)
    }

    // MARK: L2CAP

    func testL2CAPClientSendsToL2CAPServer() async throws {
        let (c, p) = configurations(central: (.l2capClient, .send), peripheral: (.l2capServer, .receive), size: 1500)
        let o = try await pair(c, p)
        assertSendReceive(o.central, o.peripheral, count: 20, o.peripheralLines)
        XCTAssertTrue(o.peripheralLines.contains { $0.contains(": flags=1, jitter=") && $0.hasSuffix(", 1500 bytes") },
                      "each packet is --packet-size on the stream: \(o.peripheralLines.suffix(4))")
    }

    func testL2CAPServerSendsToL2CAPClient() async throws {
        let (c, p) = configurations(central: (.l2capClient, .receive), peripheral: (.l2capServer, .send))
        let o = try await pair(c, p)
        assertSendReceive(o.peripheral, o.central, count: 20, o.centralLines)
    }

    func testL2CAPClientPingsL2CAPServer() async throws {
        let (c, p) = configurations(central: (.l2capClient, .ping), peripheral: (.l2capServer, .pong))
        let o = try await pair(c, p)
        assertPingPong(o.central, o.peripheral, count: 20, o.centralLines)
    }

    /// The peripheral opens the channel to a central that listens.
    func testPeripheralL2CAPClientPingsCentralL2CAPServer() async throws {
        let (c, p) = configurations(central: (.l2capServer, .pong), peripheral: (.l2capClient, .ping))
        let o = try await pair(c, p)
        assertPingPong(o.peripheral, o.central, count: 20, o.peripheralLines)
    }

    /// `--repeat 2` on the sender, `--linger` on the receiver: three runs, each begun by a reset,
    /// with the statistics over the runs; the receiver stays until the central disconnects.
    func testRepeatedRunsWithALingeringReceiver() async throws {
        var (c, p) = configurations(central: (.gattClient, .send), peripheral: (.gattServer, .receive), count: 5)
        c.run.repeatCount = 2
        p.run.linger = true
        let o = try await pair(c, p)
        XCTAssertEqual(o.central.runs, 3)
        XCTAssertEqual(o.central.speeds.count, 3)
        XCTAssertEqual(o.peripheral.runs, 3, "the lingering receiver stays for every run, until the central disconnects")
        XCTAssertEqual(o.peripheral.packetsReceived, 15)
        XCTAssertTrue(o.centralLines.contains { $0.hasPrefix("### Run stats: min=") }, "\(o.centralLines.suffix(4))")
        XCTAssertTrue(o.centralLines.contains("=== [3 of 3] Done!"))
    }

    /// A paced ping: one packet every 50 ms, so no packet waits behind another.
    func testPacedPing() async throws {
        var (c, p) = configurations(central: (.gattClient, .ping), peripheral: (.gattServer, .pong), count: 10)
        c.run.pace = .milliseconds(50)
        let o = try await pair(c, p)
        assertPingPong(o.central, o.peripheral, count: 10, o.centralLines)
    }

    /// A peer that is not bumble-bench writes nonsense before a proper run: the receiver reports
    /// each bad packet and the out-of-order one, and still finishes the run that follows.
    func testBadPacketsFromAPeerAreReportedAndTheRunGoesOn() async throws {
        var configuration = BenchConfiguration(role: .peripheral)
        configuration.lingerTime = .milliseconds(100)
        let p = configuration
        let (result, lines) = try await VirtualWorld.run { world in
            let log = Collected<String>()
            let device = await world.radio.addDevice()
            let served = Task(executorPreference: world.clock.taskExecutor) {
                try await p.run(transport: device.transport, clock: world.clock) { log.append($0) }
            }
            let (central, _) = try await world.addCentral()
            let peer = try await central.connect(DeviceAddress(BenchProfile.peripheralAddress, type: .random), timeout: .seconds(5))
            try await peer.exchangeMTU(247)
            let services = try await peer.discoverServices([BenchProfile.service])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peer.discoverCharacteristics([BenchProfile.tx], for: service)
            let tx = try XCTUnwrap(characteristics.first)
            let writes: [[UInt8]] = [[], [0x07, 0x01], [0x01, 0x00, 0x05], BenchPacket.reset.bytes,
                                     BenchPacket.sequence(BenchSequencePacket(sequence: 0, timestamp: 0, payloadLength: 20)).bytes,
                                     BenchPacket.sequence(BenchSequencePacket(sequence: 5, timestamp: 0, payloadLength: 20)).bytes,
                                     BenchPacket.sequence(BenchSequencePacket(flags: .last, sequence: 6, timestamp: 0, payloadLength: 20)).bytes]
            for w in writes { try await peer.writeValue(w, for: tx, type: .withoutResponse) }
            let result = try await served.value
            await central.close()
            return (result, log.all)
        }
        XCTAssertEqual(result.invalidPackets, 3, "\(lines)")
        XCTAssertEqual(result.outOfOrder, 1)
        XCTAssertEqual(result.packetsReceived, 3)
        XCTAssertEqual(result.runs, 1)
        XCTAssertTrue(lines.contains("!!! Invalid packet: empty packet"), "\(lines)")
        XCTAssertTrue(lines.contains("!!! Invalid packet: unknown packet type 0x7"), "\(lines)")
        XCTAssertTrue(lines.contains("!!! Unexpected packet, expected 1 but received 5"), "\(lines)")
    }
}
