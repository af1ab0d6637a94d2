import BLEHCI
import BLEWire

/// The central's connection attempt, sans-IO (Core spec Vol 4 Part E §7.8.12, §7.8.13,
/// §7.7.65.1): LE Create Connection starts it, LE Connection Complete ends it. At the deadline,
/// or when the caller goes away, LE Create Connection Cancel stops the initiator and the
/// controller then ends the attempt with status Unknown Connection Identifier, or with a link
/// that won the race, which nobody wants any more and must be disconnected. One attempt at a
/// time: the controller has one initiator.
public struct ConnectionInitiator: Sendable {
    /// Why an attempt ended without a link.
    public enum Failure: Error, Sendable, Equatable {
        /// The deadline passed.
        case timeout(DeviceAddress)
        /// The caller cancelled it.
        case cancelled
        /// The controller reported this status.
        case refused(HCIStatus)
    }

    /// What an LE Connection Complete means for the attempt.
    public enum Completion: Sendable, Equatable {
        /// The attempt `attempt` got its link.
        case connected(attempt: UInt64, handle: UInt16)
        /// The attempt ended without a link.
        case failed(attempt: UInt64, Failure)
        /// A central-role link that nobody waits for (the attempt gave up, or there was none):
        /// the owner disconnects it. `attempt`, if any, failed with `failure`.
        case unwanted(handle: UInt16, attempt: UInt64?, failure: Failure?)
        /// Not about an attempt of ours (a failure status with no attempt running).
        case ignored
    }

    private struct Attempt: Sendable {
        let id: UInt64
        let peer: DeviceAddress
        let deadline: Duration
        var cancelSent = false
        var timedOut = false
        var cancelledByCaller = false
        /// LE Connection Complete has decided the attempt: no cancel is sent after that, even
        /// while its caller has not yet taken the answer and ended it.
        var completed = false

        var failure: Failure { timedOut ? .timeout(peer) : .cancelled }
    }

    private var attempt: Attempt?
    private var nextID: UInt64 = 1

    public init() {}

    /// Whether an attempt is running.
    public var isBusy: Bool { attempt != nil }

    /// Starts an attempt towards `peer` that times out at `deadline`; nil when one is running.
    public mutating func begin(peer: DeviceAddress, deadline: Duration) -> UInt64? {
        guard attempt == nil else { return nil }
        defer { nextID += 1 }
        attempt = Attempt(id: nextID, peer: peer, deadline: deadline)
        return nextID
    }

    /// Forgets attempt `id` (its caller has its answer, or gave up waiting).
    public mutating func end(_ id: UInt64) {
        if attempt?.id == id { attempt = nil }
    }

    /// When the running attempt times out, until its cancel has been sent.
    public var nextDeadline: Duration? {
        guard let attempt, !attempt.cancelSent, !attempt.completed else { return nil }
        return attempt.deadline
    }

    /// Past the deadline: true when the owner must send LE Create Connection Cancel now.
    public mutating func expire(now: Duration) -> Bool {
        guard var a = attempt, !a.cancelSent, !a.completed, a.deadline <= now else { return false }
        a.timedOut = true
        a.cancelSent = true
        attempt = a
        return true
    }

    /// The caller of attempt `id` cancelled: true when the owner must send LE Create Connection
    /// Cancel now (only for that attempt: a stale cancel never stops a later one).
    public mutating func cancelByCaller(_ id: UInt64) -> Bool {
        guard var a = attempt, a.id == id, !a.cancelSent, !a.completed else { return false }
        a.cancelledByCaller = true
        a.cancelSent = true
        attempt = a
        return true
    }

    /// After a cancel, when no LE Connection Complete came within a command timeout (the cancel
    /// failed or the event was lost): how attempt `id` ends, so it never hangs.
    public func abandoned(_ id: UInt64) -> Failure? {
        guard let a = attempt, a.id == id, a.cancelSent, !a.completed else { return nil }
        return a.failure
    }

    /// LE Connection Complete for a central-role link or a failed attempt. It decides the
    /// running attempt once; a second completion is not about it.
    public mutating func connectionComplete(status: HCIStatus, handle: UInt16) -> Completion {
        guard var a = attempt, !a.completed else {
            return status == .success ? .unwanted(handle: handle, attempt: nil, failure: nil) : .ignored
        }
        a.completed = true
        attempt = a
        if status != .success {
            return .failed(attempt: a.id, a.timedOut || a.cancelledByCaller ? a.failure : .refused(status))
        }
        if a.timedOut || a.cancelledByCaller {
            // The link won the race with our cancel: the caller has gone.
            return .unwanted(handle: handle, attempt: a.id, failure: a.failure)
        }
        return .connected(attempt: a.id, handle: handle)
    }
}
