/// The sending side of a run, sans-IO: the `send` scenario (packets as fast as the link takes
/// them, the throughput from the ack of the last) and the `ping` scenario (the round-trip time of
/// each packet from its ack). It makes the packets and reads the peer's answers with the time
/// they came; the runner does the I/O and the waiting.
///
/// Nothing a peer sends stops it: an unreadable packet, an ack for a packet never sent, acks out
/// of order are each reported; only the ack of the last packet ends the run.
public struct BenchSenderState: Sendable {
    /// Which scenario this side plays.
    public enum Role: Sendable {
        /// Throughput: the run ends with the ack of the last packet.
        case send
        /// Latency: every packet is acknowledged.
        case ping
    }

    /// What one packet from the peer made happen.
    public enum Event: Equatable, Sendable {
        /// A packet that could not be read.
        case invalid(BenchPacketError)
        /// A reset or sequence packet, which only a receiver expects: ignored.
        case ignored(BenchPacket.Kind)
        /// Send scenario: the last packet's ack, with the throughput of the run.
        case acknowledged(bytes: Int, elapsed: Duration, speed: Double)
        /// Ping scenario: the ack of packet `sequence` after `rtt`.
        case roundTrip(sequence: UInt32, rtt: Duration)
        /// Ping scenario: the acks' sequence numbers were not in order.
        case outOfOrder(expected: UInt32, received: UInt32)
        /// An ack for a packet this run has not sent.
        case unknownAck(sequence: UInt32)
        /// The run is over (the last packet was acknowledged).
        case runDone
    }

    /// What this side plays.
    public let role: Role
    /// Each packet's length on the link, with the framing (`--packet-size`).
    public let packetSize: Int
    /// Packets in a run (`--packet-count`).
    public let packetCount: Int
    /// Octets of framing per packet, taken out of the send scenario's payload (bumble-bench
    /// keeps the whole packet at `--packet-size` there; ping's payload ignores the framing).
    public let overhead: Int

    private var start: Duration = .zero
    private var sent: [Duration] = []
    private var nextAck: UInt32 = 0
    private var finished = false
    /// Bytes of this run sent so far (packets without the framing).
    public private(set) var bytesSent = 0
    /// This run's round-trip times (ping), in order of arrival.
    public private(set) var roundTrips: [Duration] = []

    /// A sender of `packetCount` packets of `packetSize` octets per run.
    public init(role: Role, packetSize: Int, packetCount: Int, overhead: Int = 0) {
        self.role = role
        self.packetSize = packetSize
        self.packetCount = max(0, packetCount)
        self.overhead = overhead
    }

    /// The length of each sequence packet itself (what `BenchPacketIO.send` gets).
    public var packetLength: Int {
        BenchPacket.sequenceHeaderLength + payloadLength
    }

    private var payloadLength: Int {
        max(0, packetSize - BenchPacket.sequenceHeaderLength - (role == .send ? overhead : 0))
    }

    /// Starts a run at `now` (after its reset has gone out).
    public mutating func startRun(at now: Duration) {
        start = now
        sent = []
        sent.reserveCapacity(packetCount)
        nextAck = 0
        finished = false
        bytesSent = 0
        roundTrips = []
    }

    /// Whether the run's last packet has been acknowledged.
    public var runFinished: Bool { finished }

    /// Packet `index` of the run, stamped `now`.
    public mutating func packet(_ index: Int, at now: Duration) -> [UInt8] {
        let micros = (now - start).benchSeconds * 1_000_000
        let timestamp = UInt32(truncatingIfNeeded: Int64(max(0, micros.rounded(.down))))
        let packet = BenchSequencePacket(flags: index == packetCount - 1 ? .last : [], sequence: UInt32(truncatingIfNeeded: index),
                                         timestamp: timestamp, payloadLength: payloadLength)
        sent.append(now)
        bytesSent += packet.length
        return BenchPacket.sequence(packet).bytes
    }

    /// Takes one packet the peer sent, which arrived `now`.
    public mutating func receive(_ data: [UInt8], at now: Duration) -> [Event] {
        let packet: BenchPacket
        do {
            packet = try BenchPacket(decoding: data)
        } catch {
            return [.invalid(error)]
        }
        guard case let .ack(flags, sequence) = packet else {
            return [.ignored(packet == .reset ? .reset : .sequence)]
        }
        guard Int(sequence) < sent.count else { return [.unknownAck(sequence: sequence)] }
        var events: [Event] = []
        switch role {
        case .send:
            // bumble-bench's receiver acknowledges only the last packet.
            guard flags.contains(.last), !finished else { return [] }
            let elapsed = now - start
            events.append(.acknowledged(bytes: bytesSent, elapsed: elapsed, speed: BenchReceiverState.rate(bytesSent, elapsed)))
        case .ping:
            let rtt = now - sent[Int(sequence)]
            roundTrips.append(rtt)
            events.append(.roundTrip(sequence: sequence, rtt: rtt))
            if sequence == nextAck {
                nextAck &+= 1
            } else {
                events.append(.outOfOrder(expected: nextAck, received: sequence))
            }
            guard flags.contains(.last), !finished else { return events }
        }
        finished = true
        events.append(.runDone)
        return events
    }
}
