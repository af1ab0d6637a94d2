import Dispatch
import Synchronization

/// One line from stdin, read on a Dispatch thread (a blocking read must not hold a thread of
/// Swift's pool); nil at the end of input.
///
/// Cancelling the task (Ctrl-C or SIGTERM cancel the command) ends the wait at once with
/// `CancellationError`, whatever the line does: nothing can interrupt the blocked read(2), so
/// that thread stays in it until a line comes or the process exits, and its line is dropped.
/// `read` is the reading itself (`readLine()`; tests pass their own).
public func readLineFromStandardInput(reading read: @escaping @Sendable () -> String? = { readLine() }) async throws -> String? {
    let answer = OneAnswer<String?>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            guard answer.wait(continuation) else { return }
            DispatchQueue.global().async { answer.give(.success(read())) }
        }
    } onCancel: {
        answer.give(.failure(CancellationError()))
    }
}

/// A continuation resumed exactly once, by whichever comes first: the answer or a cancellation
/// (which may even come before the continuation exists).
public final class OneAnswer<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Value, any Error>)
        /// Given before anyone waited (a cancellation before the wait began).
        case given(Result<Value, any Error>)
        case done
    }

    private let state = Mutex(State.idle)

    /// Starts waiting; false when the outcome was already given (the continuation has been
    /// resumed with it, and there is nothing to start).
    public func wait(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let early = state.withLock { s -> Result<Value, any Error>? in
            switch s {
            case let .given(result):
                s = .done
                return result
            case .idle:
                s = .waiting(continuation)
                return nil
            case .waiting, .done:
                return nil
            }
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    /// Gives the outcome; only the first one counts.
    public func give(_ result: Result<Value, any Error>) {
        let waiting = state.withLock { s -> CheckedContinuation<Value, any Error>? in
            switch s {
            case .idle:
                s = .given(result)
                return nil
            case let .waiting(continuation):
                s = .done
                return continuation
            case .given, .done:
                return nil
            }
        }
        waiting?.resume(with: result)
    }
}
