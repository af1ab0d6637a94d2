#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Seconds on the monotonic clock: what the ledger's send and arrival times are read from (one
/// process, so one clock at both ends).
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// When each benchmark notification was sent and when (if) it reached the MQTT subscriber.
/// A notification is named by its notifier (numbered across every radio) and its sequence
/// number; both travel in its value (`value(notifier:sequence:)`), so the subscriber finds the
/// send time of what it receives from the payload alone.
final class NotificationLedger: Sendable {
    /// The value's length: a sensor reading's size, one LL PDU at the default data length.
    static let valueLength = 20

    /// One notification handed to its host.
    private struct Entry {
        var time: Double
        /// Sent while recording: its latency is measured.
        var measured: Bool
        var arrived = false
    }

    private struct State {
        /// Per notifier, by sequence number; nil for one not sent (or not queued).
        var sent: [[Entry?]]
        /// Latencies of the notifications sent while `recording`, per gateway, in seconds.
        var latencies: [[Double]]
        var sentWhileRecording: [Int]
        var duplicates = 0
        var recording = false
    }

    private let state: Mutex<State>
    private let notifiersPerGateway: Int

    init(gateways: Int, notifiersPerGateway: Int) {
        self.notifiersPerGateway = max(1, notifiersPerGateway)
        let notifiers = gateways * notifiersPerGateway
        state = Mutex(State(sent: Array(repeating: [], count: notifiers),
                            latencies: Array(repeating: [], count: gateways), sentWhileRecording: Array(repeating: 0, count: gateways)))
    }

    /// The value notifier `notifier` sends as number `sequence`: both little-endian, then 0xFF
    /// filler (never UTF-8, so the gateway publishes it as hex only).
    static func value(notifier: Int, sequence: Int) -> [UInt8] {
        var v = [UInt8](repeating: 0xFF, count: valueLength)
        v[0] = UInt8(truncatingIfNeeded: notifier)
        v[1] = UInt8(truncatingIfNeeded: notifier >> 8)
        for i in 0..<4 { v[2 + i] = UInt8(truncatingIfNeeded: sequence >> (8 * i)) }
        return v
    }

    /// The notifier and sequence number a value holds.
    static func decode(_ value: [UInt8]) -> (notifier: Int, sequence: Int)? {
        guard value.count == valueLength else { return nil }
        let notifier = Int(value[0]) | Int(value[1]) << 8
        var sequence = 0
        for i in 0..<4 { sequence |= Int(value[2 + i]) << (8 * i) }
        return (notifier, sequence)
    }

    /// Notifications sent from now on are the measured ones (their latencies are kept).
    func startRecording() { state.withLock { $0.recording = true } }

    /// Notifications sent from now on are not measured (those already sent still are on arrival).
    func stopRecording() { state.withLock { $0.recording = false } }

    /// `sequence` of `notifier` is about to be handed to its host at `time`.
    func sending(notifier: Int, sequence: Int, at time: Double) {
        state.withLock { s in
            guard s.sent.indices.contains(notifier) else { return }
            while s.sent[notifier].count <= sequence { s.sent[notifier].append(nil) }
            s.sent[notifier][sequence] = Entry(time: time, measured: s.recording)
            if s.recording { s.sentWhileRecording[notifier / notifiersPerGateway] += 1 }
        }
    }

    /// The host did not queue it (no subscribed central, or a full queue): it will never arrive.
    func notSent(notifier: Int, sequence: Int) {
        state.withLock { s in
            guard s.sent.indices.contains(notifier), s.sent[notifier].indices.contains(sequence),
                  let entry = s.sent[notifier][sequence] else { return }
            if entry.measured { s.sentWhileRecording[notifier / notifiersPerGateway] -= 1 }
            s.sent[notifier][sequence] = nil
        }
    }

    /// A value reached the subscriber at `time`: its latency is kept if it was sent while
    /// recording (also when it arrives after recording stopped). Returns the latency, or nil for one unknown or seen before.
    @discardableResult
    func arrived(_ value: [UInt8], at time: Double) -> Double? {
        guard let (notifier, sequence) = Self.decode(value) else { return nil }
        return state.withLock { s -> Double? in
            guard s.sent.indices.contains(notifier), s.sent[notifier].indices.contains(sequence),
                  let entry = s.sent[notifier][sequence] else { return nil }
            guard !entry.arrived else {
                s.duplicates += 1
                return nil
            }
            s.sent[notifier][sequence]?.arrived = true
            let latency = time - entry.time
            if entry.measured { s.latencies[notifier / notifiersPerGateway].append(latency) }
            return latency
        }
    }

    /// Per gateway: the latencies measured, and how many measured notifications were sent.
    func results() -> (latencies: [[Double]], sent: [Int], duplicates: Int) {
        state.withLock { ($0.latencies, $0.sentWhileRecording, $0.duplicates) }
    }
}
