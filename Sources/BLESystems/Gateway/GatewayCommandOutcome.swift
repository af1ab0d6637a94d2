import BLE
import Synchronization

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
