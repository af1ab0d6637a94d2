#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// SIGINT and SIGTERM, caught from the start of the program so that a signal arriving before a
/// command begins to wait for it (say, right after `ble serve` prints "ready") is not lost, and
/// delivered to whoever waits.
final class InterruptSignals: Sendable {
    static let shared = InterruptSignals()

    private struct State {
        var received = false
        var waiters: [UInt64: AsyncStream<Bool>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let sources = Mutex<[DispatchSourceSignalBox]>([])

    /// Takes over SIGINT and SIGTERM for the rest of the process.
    func install() {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let made = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignalBox in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.deliver() }
            source.resume()
            return DispatchSourceSignalBox(source: source)
        }
        sources.withLock { $0 = made }
    }

    private func deliver() {
        let waiters = state.withLock { s -> [AsyncStream<Bool>.Continuation] in
            s.received = true
            return Array(s.waiters.values)
        }
        for w in waiters { w.yield(true) }
    }

    /// Registers a waiter; a signal already received is delivered at once.
    func register(_ continuation: AsyncStream<Bool>.Continuation) -> UInt64 {
        let (id, already) = state.withLock { s -> (UInt64, Bool) in
            s.nextID += 1
            s.waiters[s.nextID] = continuation
            return (s.nextID, s.received)
        }
        if already { continuation.yield(true) }
        return id
    }

    func unregister(_ id: UInt64) {
        _ = state.withLock { $0.waiters.removeValue(forKey: id) }
    }
}

/// Keeps a dispatch signal source alive; only touched at install time.
struct DispatchSourceSignalBox: @unchecked Sendable {
    let source: any DispatchSourceSignal
}

/// Returns on SIGINT/SIGTERM (true, also for one received before the call) or after `limit`
/// or when cancelled (false).
@discardableResult
func waitForInterrupt(limit: Duration?) async -> Bool {
    let (stream, continuation) = AsyncStream<Bool>.makeStream()
    let id = InterruptSignals.shared.register(continuation)
    defer { InterruptSignals.shared.unregister(id) }
    let timer: Task<Void, Never>? = limit.map { limit in
        Task {
            try? await Task.sleep(for: limit)
            continuation.yield(false)
        }
    }
    defer { timer?.cancel() }
    var it = stream.makeAsyncIterator()
    let signalled = await withTaskCancellationHandler {
        await it.next()
    } onCancel: {
        continuation.finish()
    }
    return signalled ?? false
}
