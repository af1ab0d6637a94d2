import Synchronization

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
