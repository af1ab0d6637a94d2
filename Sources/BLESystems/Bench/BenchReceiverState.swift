/// The receiving side of a run, sans-IO: the `receive` scenario (measure the throughput, answer
/// the last packet) and the `pong` scenario (answer every packet). It takes each packet the peer
/// sent with the time it came and returns what happened and what to send back; the runner does
/// the I/O. A reset starts the run over; the sequence is checked packet by packet.
///
/// Nothing a peer sends stops it: a packet that cannot be read, an ack where packets belong, a
/// sequence out of order are each reported and the run goes on, as bumble-bench's receiver does.
public struct BenchReceiverState: Sendable {
    /// Which scenario this side plays.
    public enum Role: Sendable {
        /// Acknowledge the last packet only, and report the speed of each.
        case receive
        /// Acknowledge every packet.
        case pong
    }

    /// Speeds in bytes per second, as bumble-bench computes them for each packet.
    public struct Speed: Equatable, Sendable {
        /// This packet's length over the time since the previous one.
        public var instant: Double
        /// The last 63 packets' lengths over the time they took.
        public var windowed: Double
        /// Every byte since the reset over the time since the reset.
        public var average: Double
    }

    /// What one packet from the peer made happen, in order.
    public enum Event: Equatable, Sendable {
        /// A reset: a new run starts.
        case reset
        /// A packet that could not be read.
        case invalid(BenchPacketError)
        /// An ack, which only a sender expects: ignored.
        case ignoredAck(sequence: UInt32)
        /// A sequence packet; `length` is what it took on the link (with the stream framing),
        /// `speed` is reported in the receive scenario.
        case packet(sequence: UInt32, flags: BenchPacketFlags, length: Int, jitter: Double, speed: Speed?)
        /// The packet's sequence number was not the one after the previous packet's.
        case outOfOrder(expected: UInt32, received: UInt32)
        /// Send these bytes back (an ack).
        case reply([UInt8])
        /// The last packet of a run came: its jitter statistics (when there were three packets or
        /// more) and whether this side is done (it is, unless it lingers for more runs).
        case lastPacket(jitter: BenchJitterSummary?, done: Bool)
    }

    /// What this side plays.
    public let role: Role
    /// Whether to stay for more runs after the last packet (`--linger`).
    public let linger: Bool
    /// Octets each packet costs on the link beyond itself (the stream framing), for the lengths reported.
    public let overhead: Int

    private var expected: UInt32 = 0
    private var measurements: [(time: Duration, bytes: Int)] = []
    private var runStart: Duration
    private var totalBytes = 0
    private var jitter = BenchJitter()
    /// Runs whose last packet has come.
    public private(set) var runsCompleted = 0

    /// A receiver whose first run starts at `start` (a reset starts it again).
    public init(role: Role, linger: Bool = false, overhead: Int = 0, start: Duration) {
        self.role = role
        self.linger = linger
        self.overhead = overhead
        runStart = start
        measurements = [(start, 0)]
    }

    /// Bytes received in this run so far (packets without the framing).
    public var bytesReceived: Int { totalBytes }

    /// Takes one packet the peer sent, which arrived `now`.
    public mutating func receive(_ data: [UInt8], at now: Duration) -> [Event] {
        let packet: BenchPacket
        do {
            packet = try BenchPacket(decoding: data)
        } catch {
            return [.invalid(error)]
        }
        switch packet {
        case .reset:
            reset(at: now)
            return [.reset]
        case let .ack(_, sequence):
            return [.ignoredAck(sequence: sequence)]
        case let .sequence(p):
            return received(p, length: data.count, at: now)
        }
    }

    private mutating func reset(at now: Duration) {
        expected = 0
        runStart = now
        measurements = [(now, 0)]
        totalBytes = 0
        jitter = BenchJitter()
    }

    private mutating func received(_ p: BenchSequencePacket, length: Int, at now: Duration) -> [Event] {
        var events: [Event] = []
        let lateness = jitter.record(timestamp: p.timestamp, at: now)
        var speed: Speed?
        if role == .receive {
            let last = measurements.last?.time ?? runStart
            measurements.append((now, length))
            if measurements.count > 64 { measurements.removeFirst(measurements.count - 64) }
            totalBytes += length
            let windowBytes = measurements.dropFirst().reduce(0) { $0 + $1.bytes }
            let windowTime = (measurements.last?.time ?? now) - (measurements.first?.time ?? now)
            speed = Speed(instant: Self.rate(length, now - last), windowed: Self.rate(windowBytes, windowTime),
                          average: Self.rate(totalBytes, now - runStart))
        }
        events.append(.packet(sequence: p.sequence, flags: p.flags, length: length + overhead, jitter: lateness, speed: speed))
        if p.sequence != expected {
            events.append(.outOfOrder(expected: expected, received: p.sequence))
        }
        expected = p.sequence &+ 1
        if role == .pong || p.flags.contains(.last) {
            events.append(.reply(BenchPacket.ack(flags: p.flags, sequence: p.sequence).bytes))
        }
        if p.flags.contains(.last) {
            runsCompleted += 1
            events.append(.lastPacket(jitter: jitter.summary, done: !linger))
        }
        return events
    }

    /// Bytes per second; infinite when no time passed (two packets in one instant).
    static func rate(_ bytes: Int, _ elapsed: Duration) -> Double {
        let s = elapsed.benchSeconds
        return s > 0 ? Double(bytes) / s : (bytes == 0 ? 0 : .infinity)
    }
}

