import BLERuntime
import Synchronization

/// One of bumble-bench's four scenarios.
public enum BenchScenario: String, CaseIterable, Sendable {
    /// Packets as fast as the link takes them; the throughput from the ack of the last.
    case send
    /// Receive, report the speed of each packet, acknowledge the last.
    case receive
    /// Packets whose every ack gives a round-trip time.
    case ping
    /// Acknowledge every packet.
    case pong

    /// Whether this side sends the packets (and so waits for the link to be ready for them).
    public var isSender: Bool { self == .send || self == .ping }
}

/// How a scenario runs: bumble-bench's `--packet-size`, `--packet-count`, `--start-delay`,
/// `--repeat`, `--repeat-delay`, `--pace` and `--linger`, with its defaults.
public struct BenchRunOptions: Sendable {
    public var scenario: BenchScenario
    /// Each packet's length on the link, framing included (10...8192).
    public var packetSize = 500
    /// Packets per run.
    public var packetCount = 10
    /// Pause before each run's reset.
    public var startDelay: Duration = .seconds(1)
    /// Runs after the first.
    public var repeatCount = 0
    /// Pause between runs.
    public var repeatDelay: Duration = .seconds(1)
    /// Time between packet starts; zero sends as fast as the link takes them.
    public var pace: Duration = .zero
    /// Receive and pong: stay for more runs after the last packet, until the link ends.
    public var linger = false

    /// Options with bumble-bench's defaults for `scenario`.
    public init(scenario: BenchScenario) {
        self.scenario = scenario
    }
}

/// What a run measured, for callers that want numbers rather than lines (tests, scripts).
public struct BenchResult: Sendable, Equatable {
    /// Send: each run's throughput in bytes per second, from the sender's clock.
    public var speeds: [Double] = []
    /// Ping: each run's round-trip times.
    public var roundTrips: [[Duration]] = []
    /// Receive: each finished run's average speed in bytes per second.
    public var receivedSpeeds: [Double] = []
    /// Sequence packets received (receive, pong).
    public var packetsReceived = 0
    /// Packets from the peer that could not be read.
    public var invalidPackets = 0
    /// Packets (or acks) out of sequence.
    public var outOfOrder = 0
    /// Runs completed: last packet received, or acknowledged.
    public var runs = 0

    /// Nothing measured yet.
    public init() {}
}

/// Runs a scenario over a `BenchPacketIO`, timing everything on `clock` (so it runs in virtual
/// time on the virtual radio) and printing bumble-bench's lines through `log`.
public enum BenchScenarioRunner {
    /// Runs `options.scenario` to its end: the sender's last ack, the receiver's last packet
    /// (or, lingering, the end of the link). Throws `BenchError.linkEnded` when the link ends first.
    public static func run(_ options: BenchRunOptions, on io: any BenchPacketIO, clock: any BLEClock,
                           log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        switch options.scenario {
        case .send: return try await send(.send, options, io, clock, log)
        case .ping: return try await send(.ping, options, io, clock, log)
        case .receive: return try await receive(.receive, options, io, clock, log)
        case .pong: return try await receive(.pong, options, io, clock, log)
        }
    }

    // MARK: Receive and pong

    private static func receive(_ role: BenchReceiverState.Role, _ options: BenchRunOptions, _ io: any BenchPacketIO,
                                _ clock: any BLEClock, _ log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        var state = BenchReceiverState(role: role, linger: options.linger, overhead: io.overhead, start: clock.now())
        var result = BenchResult()
        var runStart = clock.now()
        while let data = try await io.receive() {
            let now = clock.now()
            for event in state.receive(data, at: now) {
                for line in BenchLines.text(event) { log(line) }
                switch event {
                case .reset:
                    runStart = now
                case .invalid:
                    result.invalidPackets += 1
                case .packet:
                    result.packetsReceived += 1
                case .outOfOrder:
                    result.outOfOrder += 1
                case let .reply(bytes):
                    do { try await io.send(bytes) } catch { log("!!! Could not send the ACK: \(error)") }
                case let .lastPacket(_, done):
                    result.runs += 1
                    if role == .receive { result.receivedSpeeds.append(BenchReceiverState.rate(state.bytesReceived, now - runStart)) }
                    if done {
                        log("=== Done!")
                        return result
                    }
                case .ignoredAck:
                    continue
                }
            }
        }
        if options.linger, result.runs > 0 { return result }
        throw BenchError.linkEnded(waiting: "the last packet")
    }

    // MARK: Send and ping

    private static func send(_ role: BenchSenderState.Role, _ options: BenchRunOptions, _ io: any BenchPacketIO,
                             _ clock: any BLEClock, _ log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        log("--- Waiting for I/O to be ready...")
        try await io.waitUntilReady()
        log("--- Go!")
        let initial = BenchSenderState(role: role, packetSize: options.packetSize, packetCount: options.packetCount, overhead: io.overhead)
        let maximum = await io.maximumPacketLength()
        guard initial.packetLength <= maximum else {
            throw BenchError.packetTooLong(size: options.packetSize, maximum: maximum + io.overhead, why: "one packet can carry on this link")
        }
        let state = BenchLocked(initial)
        let result = BenchLocked(BenchResult())
        let (finished, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .unbounded)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { signal.finish() }
                while let data = try await io.receive() {
                    let now = clock.now()
                    for event in state.withLock({ $0.receive(data, at: now) }) {
                        for line in BenchLines.text(event) { log(line) }
                        result.withLock { r in
                            switch event {
                            case .invalid: r.invalidPackets += 1
                            case .outOfOrder: r.outOfOrder += 1
                            case let .acknowledged(_, _, speed): r.speeds.append(speed)
                            default: break
                            }
                        }
                        if case .runDone = event { signal.yield() }
                    }
                }
            }
            var runsDone = finished.makeAsyncIterator()
            let runs = options.repeatCount + 1
            for run in 1...runs {
                if run > 1, options.repeatDelay > .zero {
                    log("*** Repeat delay: \(NumberText.seconds(options.repeatDelay))")
                    try await clock.sleep(for: options.repeatDelay)
                }
                if options.startDelay > .zero {
                    log("*** Startup delay: \(NumberText.seconds(options.startDelay))")
                    try await clock.sleep(for: options.startDelay)
                }
                log("=== Sending RESET")
                try await io.send(BenchPacket.reset.bytes)
                let start = clock.now()
                state.withLock { $0.startRun(at: start) }
                for index in 0..<options.packetCount {
                    if options.pace > .zero {
                        let target = start + options.pace * index
                        if clock.now() < target { try await clock.sleep(until: target) }
                    }
                    let packet = state.withLock { $0.packet(index, at: clock.now()) }
                    log(role == .send ? "Sending packet \(index): \(options.packetSize) bytes" : "Sending packet \(index)")
                    try await io.send(packet)
                }
                guard await runsDone.next() != nil else {
                    throw BenchError.linkEnded(waiting: role == .send ? "the ACK of the last packet" : "the ACKs")
                }
                report(run: run, of: runs, role: role, state: state, result: result, log: log)
            }
            if runs > 1 { log("--- End of runs") }
            group.cancelAll()
            return result.withLock { $0 }
        }
    }

    /// The lines after a run: its RTTs (ping), `Done!`, and with repeats the statistics so far.
    private static func report(run: Int, of runs: Int, role: BenchSenderState.Role, state: BenchLocked<BenchSenderState>,
                               result: BenchLocked<BenchResult>, log: @Sendable (String) -> Void) {
        let trips = state.withLock { $0.roundTrips }
        let r = result.withLock { r in
            r.runs += 1
            if role == .ping { r.roundTrips.append(trips) }
            return r
        }
        if role == .ping, let stats = BenchStatistics(trips.map(BenchLines.milliseconds)) {
            log(BenchLines.roundTrips(stats))
        }
        log(BenchLines.done(run: run, of: runs))
        guard runs > 1 else { return }
        switch role {
        case .send:
            if let stats = BenchStatistics(r.speeds) { log(BenchLines.stats("Run", stats)) }
        case .ping:
            let perRun = r.roundTrips.compactMap { BenchStatistics($0.map(BenchLines.milliseconds)) }
            if let s = BenchStatistics(perRun.map { $0.minimum }) { log(BenchLines.stats("Min RTT", s)) }
            if let s = BenchStatistics(perRun.map { $0.maximum }) { log(BenchLines.stats("Max RTT", s)) }
            if let s = BenchStatistics(perRun.map { $0.average }) { log(BenchLines.stats("Average RTT", s)) }
        }
    }
}
