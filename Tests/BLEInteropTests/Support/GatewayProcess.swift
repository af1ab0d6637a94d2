import Foundation
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `ble gateway` as a child process, for the tests against a real broker: its stderr lines
/// (what it says it does) collected so a test can wait for one, stopped by PID.
final class GatewayProcess: Sendable {
    let name: String
    private let process: Process
    private let lines = GatewayLog()

    /// Starts `ble gateway --id NAME --broker URL` with `arguments` after them (`--hci`, …).
    init(name: String, broker: String, arguments: [String]) throws {
        self.name = name
        let process = Process()
        process.executableURL = try BLETool.executableURL()
        process.arguments = ["gateway", "--id", name, "--broker", broker, "--stats-interval", "1"] + arguments
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        self.process = process
        // From a thread without blocked signals, so its SIGTERM handling is what a shell gives it.
        try process.runWithSignalsUnblocked()
        ProcessEvents.readLines(from: err.fileHandleForReading) { [lines] line in lines.append(line) } ended: { [lines] in lines.end() }
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }

    /// Everything it printed on stderr so far.
    var log: [String] { lines.all }

    /// Waits (at most `timeout`) for the `count`-th stderr line containing `text`.
    @discardableResult
    func waitForLog(_ text: String, count: Int = 1, timeout: TimeInterval = 20) async throws -> String {
        try await waitForLog("'\(text)'\(count > 1 ? " \(count) times" : "")", timeout: timeout) { lines in
            let matching = lines.filter { $0.contains(text) }
            return matching.count >= count ? matching[count - 1] : nil
        }
    }

    /// Waits (at most `timeout`) until `found` picks a line from everything printed so far:
    /// woken by each new line, not polling; fails at once when the gateway has exited.
    func waitForLog(_ what: String, timeout: TimeInterval = 20,
                    found: @escaping @Sendable ([String]) -> String?) async throws -> String {
        if let line = await lines.wait(timeout: timeout, found) { return line }
        throw MosquittoClientError("gateway \(name) did not say \(what) within \(timeout) s; it said:\n\(log.joined(separator: "\n"))")
    }

    /// SIGTERM, as Ctrl-C would (it publishes offline and disconnects); SIGKILL after 10 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if !ProcessEvents.waitForExit(process, timeout: 10) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// `kill -9`: nothing said to the broker, whose Last Will must speak for it.
    func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// The lines a gateway printed, shared with the thread that reads them, and the waits for one:
/// each new line (and the end of the output) wakes them.
private final class GatewayLog: Sendable {
    private struct Waiter {
        let found: @Sendable ([String]) -> String?
        let continuation: CheckedContinuation<String?, Never>
    }

    private struct State {
        var lines: [String] = []
        var ended = false
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        /// Waits whose task was cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    var all: [String] { state.withLock { $0.lines } }

    func append(_ line: String) {
        settle { $0.lines.append(line) }
    }

    /// The output closed (the gateway exited): waits that found nothing fail.
    func end() {
        settle { $0.ended = true }
    }

    /// The line `found` picks, as soon as there is one; nil at `timeout`, when the output
    /// ends, or when the waiting task is cancelled.
    func wait(timeout: TimeInterval, _ found: @escaping @Sendable ([String]) -> String?) async -> String? {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { s -> (String?, Bool) in
                    if let line = found(s.lines) { return (line, true) }
                    if s.ended || s.cancelled.remove(id) != nil { return (nil, true) }
                    s.waiters[id] = Waiter(found: found, continuation: continuation)
                    return (nil, false)
                }
                if now.1 { return continuation.resume(returning: now.0) }
                // The bound: a timer, not a poll.
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                    state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: nil)
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let w = s.waiters.removeValue(forKey: id) else {
                    s.cancelled.insert(id)
                    return nil
                }
                return w
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// Applies `change`, then resumes every wait it satisfied (or all, once the output ended).
    private func settle(_ change: (inout State) -> Void) {
        let ready = state.withLock { s -> [(CheckedContinuation<String?, Never>, String?)] in
            change(&s)
            var ready: [(CheckedContinuation<String?, Never>, String?)] = []
            for (id, w) in s.waiters {
                if let line = w.found(s.lines) {
                    ready.append((w.continuation, line))
                } else if s.ended {
                    ready.append((w.continuation, nil))
                } else {
                    continue
                }
                s.waiters[id] = nil
            }
            return ready
        }
        for (continuation, line) in ready { continuation.resume(returning: line) }
    }
}

extension XCTestCase {
    /// A gateway for this test, stopped in teardown (its log printed when the test failed).
    func startGateway(_ name: String, broker: MosquittoBroker, arguments: [String]) throws -> GatewayProcess {
        var extra = arguments
        if let ca = broker.caFile { extra += ["--ca", ca.path] }
        let gateway = try GatewayProcess(name: name, broker: broker.url, arguments: extra)
        addTeardownBlock { [self] in
            // (`hasSucceeded` is false until the run has stopped, so inside teardown it is always false.)
            if (testRun?.totalFailureCount ?? 0) > 0 { print("--- gateway \(name) said:\n\(gateway.log.joined(separator: "\n"))") }
            gateway.stop()
        }
        return gateway
    }
}
