/// Callers waiting for a result, by token: every continuation is resumed exactly once, by
/// `resume`, by `resumeAll` when what they wait on goes away, or never inserted at all.
/// Isolated to the host actor that owns it.
struct ContinuationTable<Value: Sendable> {
    private var waiting: [UInt64: CheckedContinuation<Value, any Error>] = [:]

    var isEmpty: Bool { waiting.isEmpty }

    /// Whether somebody waits under `token`.
    func contains(_ token: UInt64) -> Bool { waiting[token] != nil }

    mutating func insert(_ token: UInt64, _ continuation: CheckedContinuation<Value, any Error>) {
        waiting[token] = continuation
    }

    /// Resumes the waiter of `token` with `result`; false when nobody waits under it.
    @discardableResult
    mutating func resume(_ token: UInt64, with result: Result<Value, any Error>) -> Bool {
        guard let c = waiting.removeValue(forKey: token) else { return false }
        c.resume(with: result)
        return true
    }

    /// Resumes every waiter with `result` (in token order, so the outcome is deterministic).
    mutating func resumeAll(with result: Result<Value, any Error>) {
        let all = waiting.sorted { $0.key < $1.key }
        waiting = [:]
        for (_, c) in all { c.resume(with: result) }
    }
}
