/// The background tasks a host has started (the transport reader and writer, its timer,
/// commands sent on the peer's behalf, application handlers), so that closing the host cancels
/// every one of them. The host records a task in the same actor turn that starts it and removes
/// it when the task ends, so an entry never outlives its task.
struct HostTasks {
    private var running: [UInt64: Task<Void, Never>] = [:]
    private var nextID: UInt64 = 1
    /// Set by `cancelAll`: tasks started later are cancelled at once.
    private(set) var closed = false

    /// Number of tasks still running (for tests and diagnostics).
    var count: Int { running.count }

    /// An identifier for the task about to be started.
    mutating func reserve() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Records a started task (cancelling it at once after `cancelAll`).
    mutating func record(_ id: UInt64, _ task: Task<Void, Never>) {
        if closed {
            task.cancel()
        } else {
            running[id] = task
        }
    }

    mutating func ended(_ id: UInt64) {
        running[id] = nil
    }

    /// Cancels one task, if it still runs.
    mutating func cancel(_ id: UInt64) {
        running.removeValue(forKey: id)?.cancel()
    }

    /// Cancels every running task; later ones start cancelled.
    mutating func cancelAll() {
        closed = true
        let tasks = running.values
        running = [:]
        for t in tasks { t.cancel() }
    }
}
