import BLE
import BLEGateway
import Foundation
import Synchronization

/// What a gateway counts besides its outbound queue's counts.
struct GatewayStatistics: Sendable {
    /// Successful connections to the broker (the first, and each reconnection).
    var connections = 0
    var reports = 0
    var commands = 0
    var refused = 0
    var failed = 0
    var notifications = 0
    /// PUBACKs with a reason code of 0x80 or more (not authorized, say).
    var brokerRefused = 0
    /// Messages the client refused for a reason other than a lost connection.
    var publishFailed = 0
}

/// Commands between the MQTT thread and the gateway actor: at most `limit` waiting; more are
/// dropped on the MQTT thread and counted, so a flood of commands costs bounded memory.
final class GatewayIntake: Sendable {
    private let state = Mutex((waiting: 0, dropped: 0))
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// On the MQTT thread: whether one more command may wait.
    func admit() -> Bool {
        state.withLock { s in
            guard s.waiting < limit else {
                s.dropped += 1
                return false
            }
            s.waiting += 1
            return true
        }
    }

    /// The gateway took one.
    func taken() { state.withLock { $0.waiting = max(0, $0.waiting - 1) } }

    var dropped: Int { state.withLock { $0.dropped } }
}

/// At most `perWindow` log lines each `window`; the rest counted and told with the next line.
struct GatewayLogLimiter: Sendable {
    var window: Duration = .seconds(10)
    var perWindow = 20
    private var windowStart: Duration?
    private var lines = 0
    private var held = 0

    /// Whether a line may go now, and how many were held back before it.
    mutating func allow(now: Duration) -> (Bool, Int) {
        if let start = windowStart, now - start < window {
            guard lines < perWindow else {
                held += 1
                return (false, 0)
            }
        } else {
            windowStart = now
            lines = 0
        }
        lines += 1
        defer { held = 0 }
        return (true, held)
    }
}

/// A subscription a command made: the task that publishes its values, and an identifier that
/// tells it from a later one of the same characteristic.
struct GatewaySubscription: Sendable {
    var id: Int
    var task: Task<Void, Never>
}

/// One subscription a command made: a device's characteristic.
struct GatewaySubscriptionKey: Hashable, Sendable {
    var address: BDAddress
    var characteristic: BluetoothUUID
}

extension Gateway {
    /// `status/stats`: counts since the gateway started.
    func statisticsPayload() -> JSON {
        let c = outbox.counts
        return .object([
            ("gateway", .string(topics.name)),
            ("uptime", .int(Int(Date().timeIntervalSince(started)))),
            ("brokerConnections", .int(statistics.connections)),
            ("reconnections", .int(max(0, statistics.connections - 1))),
            ("published", .int(c.published)),
            ("acknowledged", .int(c.acknowledged)),
            ("inFlight", .int(outbox.inFlightCount)),
            ("queued", .object([("control", .int(outbox.queuedControl)), ("replies", .int(outbox.queuedReplies)),
                                ("notifications", .int(outbox.queuedNotifications)), ("advertisements", .int(outbox.queuedAdvertisements))])),
            ("dropped", .object([("control", .int(c.controlDropped)), ("replies", .int(c.repliesDropped)),
                                 ("notifications", .int(c.notificationsDropped)), ("advertisements", .int(c.advertisementsDropped)),
                                 ("commands", .int(intake.dropped)), ("publishFailed", .int(statistics.publishFailed))])),
            ("brokerRefused", .int(statistics.brokerRefused)),
            ("advertisementsSuperseded", .int(c.advertisementsSuperseded)),
            ("reports", .int(statistics.reports)),
            ("devices", .int(heard.count)),
            ("links", .int(links.count)),
            ("subscriptions", .int(subscriptions.count)),
            ("notifications", .int(statistics.notifications)),
            ("commands", .object([("received", .int(statistics.commands)), ("refused", .int(statistics.refused)),
                                  ("failed", .int(statistics.failed))])),
            ("time", .int(GatewayPayloads.milliseconds(Date()))),
        ])
    }
}

/// One command's answer, given once: by the work or by its deadline, whichever comes first.
final class GatewayCommandOutcome: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<[(String, JSON)], GatewayFailure>, Never>?
        var result: Result<[(String, JSON)], GatewayFailure>?
        var finished: (@Sendable () -> Void)?
        var done = false
    }

    private let state = Mutex(State())

    func wait(_ c: CheckedContinuation<Result<[(String, JSON)], GatewayFailure>, Never>) {
        state.withLock { $0.continuation = c }
    }

    /// Called when the answer is given (the timer's cancellation); at once if it already was.
    func onFinish(_ action: @escaping @Sendable () -> Void) {
        let already = state.withLock { s -> Bool in
            if s.done { return true }
            s.finished = action
            return false
        }
        if already { action() }
    }

    func finish(_ result: Result<[(String, JSON)], GatewayFailure>) {
        let (continuation, action) = state.withLock { s -> (CheckedContinuation<Result<[(String, JSON)], GatewayFailure>, Never>?, (@Sendable () -> Void)?) in
            guard !s.done else { return (nil, nil) }
            s.done = true
            defer { s.continuation = nil; s.finished = nil }
            return (s.continuation, s.finished)
        }
        continuation?.resume(returning: result)
        action?()
    }
}
