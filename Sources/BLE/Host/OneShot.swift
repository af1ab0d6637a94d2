/// A result that arrives once, possibly before anyone waits for it. Used inside the host actor for
/// operations whose answer comes as a later HCI event (a connection completing, a link going down),
/// so an event that overtakes its waiter is not lost. Isolated to the actor that owns it.
final class OneShot<Value: Sendable> {
    private var result: Result<Value, any Error>?
    private var continuation: CheckedContinuation<Value, any Error>?

    init() {}

    var isFulfilled: Bool { result != nil }

    /// Delivers the result; later calls are ignored (continuations are resumed exactly once).
    func fulfill(_ r: Result<Value, any Error>) {
        guard result == nil else { return }
        result = r
        if let c = continuation {
            continuation = nil
            c.resume(with: r)
        }
    }

    func succeed(_ v: Value) { fulfill(.success(v)) }
    func fail(_ e: any Error) { fulfill(.failure(e)) }

    func wait(isolation: isolated (any Actor)? = #isolation) async throws -> Value {
        if let r = result { return try r.get() }
        return try await withCheckedThrowingContinuation(isolation: isolation) { (c: CheckedContinuation<Value, any Error>) in
            if let r = result {
                c.resume(with: r)
            } else {
                continuation = c
            }
        }
    }
}
