import BLESystems
import XCTest

/// bumble-bench's packet format and the two sides' checks of what a peer sends: exact bytes,
/// typed errors for bad packets (never a trap), and runs that go on past them.
final class BenchPacketTests: XCTestCase {
    // MARK: Format

    func testPacketsHaveBumbleBenchsLayout() throws {
        XCTAssertEqual(BenchPacket.reset.bytes, [0x00])
        XCTAssertEqual(BenchPacket.ack(flags: .last, sequence: 0x0403_0201).bytes, [0x02, 0x01, 0x01, 0x02, 0x03, 0x04])
        let packet = BenchSequencePacket(flags: [], sequence: 7, timestamp: 0x0A0B_0C0D, payloadLength: 3)
        XCTAssertEqual(BenchPacket.sequence(packet).bytes, [0x01, 0x00, 0x07, 0x00, 0x00, 0x00, 0x0D, 0x0C, 0x0B, 0x0A, 0, 0, 0])
        XCTAssertEqual(packet.length, 13)
    }

    func testPacketsDecodeWhatTheyEncode() throws {
        let packets: [BenchPacket] = [
            .reset, .ack(flags: [], sequence: 99), .ack(flags: BenchPacketFlags(rawValue: 0x81), sequence: .max),
            .sequence(BenchSequencePacket(flags: .last, sequence: 12345, timestamp: 678, payloadLength: 490)),
            .sequence(BenchSequencePacket(sequence: 0, timestamp: 0, payloadLength: 0)),
        ]
        for p in packets { XCTAssertEqual(try BenchPacket(decoding: p.bytes), p) }
    }

    func testBadPacketsAreTypedErrors() {
        XCTAssertThrowsError(try BenchPacket(decoding: [])) { XCTAssertEqual($0 as? BenchPacketError, .empty) }
        XCTAssertThrowsError(try BenchPacket(decoding: [0x07, 1, 2])) { XCTAssertEqual($0 as? BenchPacketError, .unknownType(7)) }
        XCTAssertThrowsError(try BenchPacket(decoding: [0x02, 0, 1])) {
            XCTAssertEqual($0 as? BenchPacketError, .truncated(.ack, length: 3, needed: 6))
        }
        XCTAssertThrowsError(try BenchPacket(decoding: [0x01, 0, 1, 0, 0, 0, 9])) {
            XCTAssertEqual($0 as? BenchPacketError, .truncated(.sequence, length: 7, needed: 10))
            XCTAssertEqual("\($0)", "sequence packet too short: 7 bytes, need at least 10")
        }
        // Every short prefix of every kind, and every first octet: an error or a packet, never a trap.
        for first in 0...255 {
            for length in 0...11 {
                _ = try? BenchPacket(decoding: [UInt8(first)] + Array(repeating: 0xFF, count: length))
            }
        }
    }

    // MARK: Stream framing (L2CAP)

    func testFramingIsATwoByteBigEndianLength() {
        XCTAssertEqual(BenchStreamFraming.frame([1, 2, 3]), [0x00, 0x03, 1, 2, 3])
        XCTAssertEqual(BenchStreamFraming.frame(Array(repeating: 0, count: 0x0123))?.prefix(2), [0x01, 0x23])
        XCTAssertNil(BenchStreamFraming.frame(Array(repeating: 0, count: 65536)))
    }

    func testTheDeframerIgnoresSDUBoundaries() {
        let packets: [[UInt8]] = [[0], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 5], Array(repeating: 9, count: 300), [2, 1, 4, 0, 0, 0]]
        let stream = packets.flatMap { BenchStreamFraming.frame($0) ?? [] }
        for size in [1, 2, 3, 7, 64, 1024] {
            var deframer = BenchStreamDeframer()
            var out: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + size)
                out += deframer.receive(Array(stream[offset..<end]))
                offset = end
            }
            XCTAssertEqual(out, packets, "SDUs of \(size) bytes")
            XCTAssertFalse(deframer.hasPartialPacket)
        }
        var deframer = BenchStreamDeframer()
        XCTAssertEqual(deframer.receive([0x00, 0x00, 0x00]), [[]], "a zero length is an empty packet, which the decoder reports")
        XCTAssertTrue(deframer.hasPartialPacket, "half a length is kept for the next SDU")
    }

    // MARK: Receiver (receive, pong)

    private func sequence(_ n: UInt32, last: Bool = false, timestamp: UInt32 = 0, payload: Int = 10) -> [UInt8] {
        BenchPacket.sequence(BenchSequencePacket(flags: last ? .last : [], sequence: n, timestamp: timestamp, payloadLength: payload)).bytes
    }

    func testTheReceiverChecksTheSequenceAndAcknowledgesTheLastPacket() {
        var receiver = BenchReceiverState(role: .receive, start: .zero)
        XCTAssertEqual(receiver.receive(BenchPacket.reset.bytes, at: .seconds(1)), [.reset])
        var events = receiver.receive(sequence(0), at: .seconds(2))
        guard case let .packet(0, _, 20, _, speed?) = events.first else { return XCTFail("\(events)") }
        XCTAssertEqual(speed.average, 20, accuracy: 1e-9, "20 bytes in the second since the reset")
        XCTAssertEqual(events.count, 1)

        events = receiver.receive(sequence(2), at: .seconds(3))
        XCTAssertTrue(events.contains(.outOfOrder(expected: 1, received: 2)), "\(events)")
        events = receiver.receive(sequence(3, last: true), at: .seconds(4))
        XCTAssertFalse(events.contains { if case .outOfOrder = $0 { return true } else { return false } }, "3 follows 2: \(events)")
        XCTAssertTrue(events.contains(.reply(BenchPacket.ack(flags: .last, sequence: 3).bytes)), "\(events)")
        XCTAssertTrue(events.contains { if case .lastPacket(_, done: true) = $0 { return true } else { return false } }, "\(events)")
        XCTAssertEqual(receiver.runsCompleted, 1)
        XCTAssertEqual(receiver.bytesReceived, 60)
    }

    func testBadPacketsFromThePeerAreReportedAndTheRunGoesOn() {
        var receiver = BenchReceiverState(role: .pong, linger: true, start: .zero)
        XCTAssertEqual(receiver.receive([], at: .seconds(1)), [.invalid(.empty)])
        XCTAssertEqual(receiver.receive([0x01, 0x00, 0x05], at: .seconds(1)), [.invalid(.truncated(.sequence, length: 3, needed: 10))])
        XCTAssertEqual(receiver.receive([0xEE], at: .seconds(1)), [.invalid(.unknownType(0xEE))])
        XCTAssertEqual(receiver.receive(BenchPacket.ack(flags: [], sequence: 4).bytes, at: .seconds(1)), [.ignoredAck(sequence: 4)])
        let events = receiver.receive(sequence(0), at: .seconds(2))
        XCTAssertTrue(events.contains(.reply(BenchPacket.ack(flags: [], sequence: 0).bytes)), "pong acknowledges every packet: \(events)")
        let last = receiver.receive(sequence(1, last: true), at: .seconds(3))
        XCTAssertTrue(last.contains { if case .lastPacket(_, done: false) = $0 { return true } else { return false } }, "lingering: \(last)")
        XCTAssertEqual(BenchLines.text(BenchReceiverState.Event.invalid(.unknownType(0xEE))), ["!!! Invalid packet: unknown packet type 0xEE"])
    }

    func testJitterIsLatenessAgainstTheFirstPacket() {
        var receiver = BenchReceiverState(role: .pong, start: .zero)
        _ = receiver.receive(sequence(0, timestamp: 0), at: .seconds(10))
        _ = receiver.receive(sequence(1, timestamp: 1_000_000), at: .milliseconds(11_250))
        let events = receiver.receive(sequence(2, last: true, timestamp: 2_000_000), at: .seconds(12))
        guard case let .packet(_, _, _, jitter, nil) = events.first else { return XCTFail("\(events)") }
        XCTAssertEqual(jitter, 0, accuracy: 1e-9)
        guard case let .lastPacket(summary?, _) = events.last else { return XCTFail("three packets give jitter statistics: \(events)") }
        XCTAssertEqual(summary.signed.maximum, 0.25 - 0.25 / 3, accuracy: 1e-9)
        XCTAssertEqual(summary.histogram.count, 20, "bumble-bench's 20 bins")
        XCTAssertEqual(summary.histogram.first?.count, 2, "the two on-time packets in the lowest bin")
        XCTAssertEqual(summary.histogram.last?.count, 1, "the late one in the highest")
        XCTAssertEqual(summary.histogram.reduce(0) { $0 + $1.count }, 3)
    }

    // MARK: Sender (send, ping)

    func testTheSenderTakesTheFramingOutOfThePayload() {
        var sender = BenchSenderState(role: .send, packetSize: 100, packetCount: 2, overhead: 2)
        sender.startRun(at: .seconds(5))
        let first = sender.packet(0, at: .milliseconds(5_001))
        XCTAssertEqual(first.count, 98, "with the 2-byte length the packet is 100 bytes on the stream")
        XCTAssertEqual(try BenchPacket(decoding: first), .sequence(BenchSequencePacket(sequence: 0, timestamp: 1000, payloadLength: 88)))
        let last = sender.packet(1, at: .milliseconds(5_002))
        guard case let .sequence(p) = try? BenchPacket(decoding: last) else { return XCTFail() }
        XCTAssertEqual(p.flags, .last)
        var ping = BenchSenderState(role: .ping, packetSize: 100, packetCount: 1, overhead: 2)
        ping.startRun(at: .zero)
        XCTAssertEqual(ping.packet(0, at: .zero).count, 100, "ping's payload ignores the framing, as bumble-bench's does")
    }

    func testTheSenderFinishesOnTheLastAckOnly() {
        var sender = BenchSenderState(role: .send, packetSize: 50, packetCount: 3)
        sender.startRun(at: .zero)
        for i in 0..<3 { _ = sender.packet(i, at: .zero) }
        XCTAssertEqual(sender.receive(BenchPacket.reset.bytes, at: .seconds(1)), [.ignored(.reset)])
        XCTAssertEqual(sender.receive([0x02], at: .seconds(1)), [.invalid(.truncated(.ack, length: 1, needed: 6))])
        XCTAssertEqual(sender.receive(BenchPacket.ack(flags: .last, sequence: 40).bytes, at: .seconds(1)), [.unknownAck(sequence: 40)])
        XCTAssertEqual(sender.receive(BenchPacket.ack(flags: [], sequence: 1).bytes, at: .seconds(1)), [])
        XCTAssertFalse(sender.runFinished)
        let events = sender.receive(BenchPacket.ack(flags: .last, sequence: 2).bytes, at: .seconds(2))
        XCTAssertEqual(events, [.acknowledged(bytes: 150, elapsed: .seconds(2), speed: 75), .runDone])
        XCTAssertEqual(sender.receive(BenchPacket.ack(flags: .last, sequence: 2).bytes, at: .seconds(3)), [], "a second ack ends nothing")
    }

    func testPingTimesEachAckAndNoticesThemOutOfOrder() {
        var ping = BenchSenderState(role: .ping, packetSize: 20, packetCount: 3)
        ping.startRun(at: .zero)
        for i in 0..<3 { _ = ping.packet(i, at: .milliseconds(10 * i)) }
        XCTAssertEqual(ping.receive(BenchPacket.ack(flags: [], sequence: 1).bytes, at: .milliseconds(15)),
                       [.roundTrip(sequence: 1, rtt: .milliseconds(5)), .outOfOrder(expected: 0, received: 1)])
        XCTAssertEqual(ping.receive(BenchPacket.ack(flags: [], sequence: 0).bytes, at: .milliseconds(16)), [.roundTrip(sequence: 0, rtt: .milliseconds(16))])
        XCTAssertEqual(ping.receive(BenchPacket.ack(flags: .last, sequence: 2).bytes, at: .milliseconds(27)),
                       [.roundTrip(sequence: 2, rtt: .milliseconds(7)), .outOfOrder(expected: 1, received: 2), .runDone])
        XCTAssertEqual(ping.roundTrips, [.milliseconds(5), .milliseconds(16), .milliseconds(7)])
        XCTAssertEqual(BenchLines.text(.roundTrip(sequence: 2, rtt: .microseconds(7_125))), ["<<< Received ACK [2], RTT=7.13ms"])
    }

    func testStatisticsAreBumbleBenchs() throws {
        let s = try XCTUnwrap(BenchStatistics([1, 2, 3, 4]))
        XCTAssertEqual(s.average, 2.5)
        XCTAssertEqual(s.standardDeviation, (5.0 / 3).squareRoot(), accuracy: 1e-12, "sample deviation, n − 1")
        XCTAssertEqual(BenchStatistics([7])?.standardDeviation, 0, "one value: no deviation, no error")
        XCTAssertNil(BenchStatistics([]))
        XCTAssertEqual(BenchLines.roundTrips(s), "@@@ RTTs: min=1.00, max=4.00, average=2.50, stdev=1.29")
    }
}
