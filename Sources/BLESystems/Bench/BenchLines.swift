/// The lines `ble bench` prints, worded as bumble-bench words them (without its colours and log
/// prefixes), so whoever reads or parses one tool's output can read the other's: throughput as
/// `Speed: instant=…, windowed=…, average=…` (bytes per second) on the receiver and
/// `@@@ Received ACK. Speed: average=…` on the sender, latency as `@@@ RTTs: min=…` (milliseconds).
public enum BenchLines {
    /// A receiver's (`receive`, `pong`) line for one event, nil for events that print nothing.
    public static func text(_ event: BenchReceiverState.Event) -> [String] {
        switch event {
        case .reset:
            return ["=== Received RESET"]
        case let .invalid(error):
            return ["!!! Invalid packet: \(error)"]
        case let .ignoredAck(sequence):
            return ["!!! Ignored an ACK [\(sequence)]: a receiver expects packets"]
        case let .packet(sequence, flags, length, jitter, speed):
            guard let speed else {
                return ["<<< Received packet \(sequence): flags=\(flags.rawValue), \(length) bytes, jitter=\(NumberText.fixed(jitter, 4))"]
            }
            return ["<<< Received packet \(sequence): flags=\(flags.rawValue), jitter=\(NumberText.fixed(jitter, 4)), \(length) bytes",
                    "Speed: instant=\(NumberText.fixed(speed.instant, 4)), windowed=\(NumberText.fixed(speed.windowed, 4)), "
                        + "average=\(NumberText.fixed(speed.average, 4))"]
        case let .outOfOrder(expected, received):
            return [unexpected(expected, received)]
        case .reply:
            return []
        case let .lastPacket(jitter, _):
            var lines = ["@@@ Received last packet"]
            if let jitter {
                lines.append("### Jitter (signed) stats: " + jitter.signed.text(decimals: 3))
                lines.append("### Jitter (absolute) stats: " + jitter.absolute.text(decimals: 3))
                lines += jitter.histogram.map { "@@@ >= \(NumberText.fixed($0.lowerBound, 4)): \($0.count)" }
            }
            return lines
        }
    }

    /// A sender's (`send`, `ping`) lines for one event.
    public static func text(_ event: BenchSenderState.Event) -> [String] {
        switch event {
        case let .invalid(error):
            return ["!!! Invalid packet: \(error)"]
        case let .ignored(kind):
            return ["!!! Ignored a \(kind) packet: a sender expects ACKs"]
        case let .acknowledged(bytes, elapsed, speed):
            return ["@@@ Received ACK. Speed: average=\(NumberText.fixed(speed, 4)) (\(bytes) bytes in \(NumberText.fixed(elapsed.benchSeconds, 2)) seconds)"]
        case let .roundTrip(sequence, rtt):
            return ["<<< Received ACK [\(sequence)], RTT=\(NumberText.fixed(milliseconds(rtt), 2))ms"]
        case let .outOfOrder(expected, received):
            return [unexpected(expected, received)]
        case let .unknownAck(sequence):
            return ["!!! Received an ACK [\(sequence)] for a packet this run has not sent"]
        case .runDone:
            return []
        }
    }

    /// `@@@ RTTs: min=…, max=…, average=…, stdev=…`, in milliseconds.
    public static func roundTrips(_ stats: BenchStatistics) -> String {
        "@@@ RTTs: " + stats.text()
    }

    /// `=== Done!`, with `[run of runs]` when the run repeats.
    public static func done(run: Int, of runs: Int) -> String {
        runs > 1 ? "=== [\(run) of \(runs)] Done!" : "=== Done!"
    }

    /// `### TITLE stats: min=…, max=…, average=…, stdev=…`, after each run of a repeated scenario.
    public static func stats(_ title: String, _ stats: BenchStatistics) -> String {
        "### \(title) stats: " + stats.text()
    }

    static func unexpected(_ expected: UInt32, _ received: UInt32) -> String {
        "!!! Unexpected packet, expected \(expected) but received \(received)"
    }

    static func milliseconds(_ d: Duration) -> Double { d.benchSeconds * 1000 }
}
