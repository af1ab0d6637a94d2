import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A Bumble peer script (Tests/BLEInteropTests/peers/) running as a child process.
///
/// The peer is started with the venv's Python, `--transport tcp-client:…` for rootcanal and a
/// fresh static random `--address`; `init` returns once it printed `READY`. Every later stdout
/// line is a JSON event (see peers/README.md), collected in a mailbox: each wait takes the first
/// not-yet-taken event that matches, so events that arrive before the test asks for them are
/// never missed, and one event satisfies one wait.
///
/// `stop()` (also run by `deinit`) sends SIGTERM to the peer's PID and SIGKILL 2 s later.
/// The blocking waits are for synchronous tests; async tests should use ``event(_:timeout:where:)``,
/// which does not hold a thread of the cooperative pool (only 2 on a 2-core machine).
final class PeerProcess: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case launch(script: String, reason: String)
        case notReady(script: String, reason: String, stdout: String, stderr: String)
        case timeout(script: String, waitingFor: String, seconds: TimeInterval, recent: [String], stderr: String)
        case exited(script: String, waitingFor: String, status: Int32?, recent: [String], stderr: String)

        var description: String {
            switch self {
            case .launch(let script, let reason):
                return "peer \(script) could not be launched: \(reason)"
            case .notReady(let script, let reason, let stdout, let stderr):
                return "peer \(script) did not become READY: \(reason)\n--- stdout:\n\(stdout)\n--- stderr (tail):\n\(stderr)"
            case .timeout(let script, let what, let seconds, let recent, let stderr):
                return "peer \(script): no \(what) within \(seconds) s\n--- unclaimed/recent events:\n"
                    + recent.joined(separator: "\n") + "\n--- stderr (tail):\n\(stderr)"
            case .exited(let script, let what, let status, let recent, let stderr):
                return "peer \(script) ended (status \(status.map(String.init) ?? "?")) while waiting for \(what)\n"
                    + "--- unclaimed/recent events:\n" + recent.joined(separator: "\n")
                    + "\n--- stderr (tail):\n\(stderr)"
            }
        }
    }

    /// The script's file name, e.g. `peripheral.py`.
    let script: String
    /// The static random address the peer uses (passed as `--address`).
    let address: StaticRandomAddress
    /// The peer's process ID.
    let pid: Int32

    private let process: Process
    private let mailbox: PeerMailbox
    private let stopLock = NSLock()
    private var stopped = false

    /// Starts `script` from the peers directory and waits until it prints `READY`.
    ///
    /// - Parameters:
    ///   - arguments: extra arguments after `--transport … --address …` (e.g. `["--name", "X"]`).
    ///   - address: the peer's address; a fresh one by default.
    ///   - readyTimeout: how long to wait for `READY` (Python + Bumble start-up takes ~0.5 s).
    init(
        _ script: String,
        arguments: [String] = [],
        address: StaticRandomAddress = InteropEnvironment.nextStaticRandomAddress(),
        environment: InteropEnvironment,
        readyTimeout: TimeInterval = 20
    ) throws {
        self.script = script
        self.address = address
        let mailbox = PeerMailbox(script: script)
        self.mailbox = mailbox

        let process = Process()
        process.executableURL = environment.python
        process.arguments = [
            "-u", environment.peerScript(script).path,
            "--transport", environment.bumbleTransport,
            "--address", address.description,
        ] + arguments
        process.currentDirectoryURL = environment.peers
        var childEnvironment = ProcessInfo.processInfo.environment
        childEnvironment["PYTHONUNBUFFERED"] = "1"
        childEnvironment["PYTHONDONTWRITEBYTECODE"] = "1"  // no __pycache__ in the source tree
        process.environment = childEnvironment
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        process.terminationHandler = { finished in mailbox.processExited(status: finished.terminationStatus) }
        do {
            try process.run()
        } catch {
            throw Failure.launch(script: script, reason: "\(error)")
        }
        self.process = process
        self.pid = process.processIdentifier

        PeerMailbox.startReader(stdout.fileHandleForReading, name: "\(script) stdout") { mailbox.stdout($0) }
        PeerMailbox.startReader(stderr.fileHandleForReading, name: "\(script) stderr") { mailbox.stderr($0) }

        if let reason = mailbox.waitUntilReady(timeout: readyTimeout) {
            stop()
            throw Failure.notReady(
                script: script, reason: reason, stdout: mailbox.unexpectedStdout, stderr: mailbox.stderrTail())
        }
    }

    deinit { stop() }

    // MARK: - Events

    /// Blocks until an event named `name` (and matching `predicate`) arrives, and takes it.
    @discardableResult
    func waitForEvent(
        _ name: String,
        timeout: TimeInterval = 10,
        where predicate: @escaping @Sendable (PeerEvent) -> Bool = { _ in true }
    ) throws -> PeerEvent {
        try waitForEvent(matching: { $0.name == name && predicate($0) }, timeout: timeout,
                         description: "\"\(name)\" event")
    }

    /// Blocks until an event matching `predicate` arrives, and takes it.
    @discardableResult
    func waitForEvent(
        matching predicate: @escaping @Sendable (PeerEvent) -> Bool,
        timeout: TimeInterval = 10,
        description: String = "matching event"
    ) throws -> PeerEvent {
        let semaphore = DispatchSemaphore(value: 0)
        let box = ResultBox()
        _ = mailbox.register(predicate: predicate, timeout: timeout, description: description) { result in
            box.set(result)
            semaphore.signal()
        }
        semaphore.wait()
        return try box.get()
    }

    /// Suspends until an event named `name` (and matching `predicate`) arrives, and takes it.
    @discardableResult
    func event(
        _ name: String,
        timeout: TimeInterval = 10,
        where predicate: @escaping @Sendable (PeerEvent) -> Bool = { _ in true }
    ) async throws -> PeerEvent {
        try await event(matching: { $0.name == name && predicate($0) }, timeout: timeout,
                        description: "\"\(name)\" event")
    }

    /// Suspends until an event matching `predicate` arrives, and takes it. Cancellation ends the
    /// wait with `CancellationError`.
    @discardableResult
    func event(
        matching predicate: @escaping @Sendable (PeerEvent) -> Bool,
        timeout: TimeInterval = 10,
        description: String = "matching event"
    ) async throws -> PeerEvent {
        let ticket = CancellationTicket()
        let mailbox = self.mailbox
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PeerEvent, Error>) in
                let id = mailbox.register(predicate: predicate, timeout: timeout, description: description) {
                    continuation.resume(with: $0)
                }
                if ticket.attach(id) { mailbox.cancel(id) }
            }
        } onCancel: {
            if let id = ticket.cancel() { mailbox.cancel(id) }
        }
    }

    /// Every event received so far (taken or not), in order.
    var events: [PeerEvent] { mailbox.allEvents }

    /// A stream of the events received from now on (independent of the mailbox); it finishes
    /// when the peer's stdout closes.
    func eventStream() -> AsyncStream<PeerEvent> { mailbox.makeStream() }

    /// What the peer wrote on stderr so far (its log; the last 64 KiB).
    var standardError: String { mailbox.stderrTail(limit: 65536) }

    var isRunning: Bool { process.isRunning }

    /// Waits for the peer to exit by itself (e.g. `central.py` after `done`); returns its status,
    /// or nil if it was still running after `timeout` (it is left running).
    func waitForExit(timeout: TimeInterval = 10) -> Int32? {
        guard ProcessEvents.waitForExit(process, timeout: timeout) else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Stops the peer: SIGTERM to its PID, SIGKILL if it is still running 2 s later. Idempotent.
    func stop() {
        stopLock.lock()
        let first = !stopped
        stopped = true
        stopLock.unlock()
        guard first else { return }
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        if !ProcessEvents.waitForExit(process, timeout: 2) {
            kill(pid, SIGKILL)
            _ = ProcessEvents.waitForExit(process, timeout: 2)
        }
    }
}

extension XCTestCase {
    /// Starts a peer that is stopped when the test ends, whatever happens in between.
    func startPeer(
        _ script: String,
        arguments: [String] = [],
        address: StaticRandomAddress = InteropEnvironment.nextStaticRandomAddress(),
        environment: InteropEnvironment,
        readyTimeout: TimeInterval = 20
    ) throws -> PeerProcess {
        let peer = try PeerProcess(script, arguments: arguments, address: address,
                                   environment: environment, readyTimeout: readyTimeout)
        addTeardownBlock { peer.stop() }
        return peer
    }
}

// MARK: - Mailbox

/// The state shared by a peer's reader threads and the test: lines, events, waiters.
final class PeerMailbox: @unchecked Sendable {
    typealias Resume = @Sendable (Result<PeerEvent, Error>) -> Void

    private struct Waiter {
        let predicate: @Sendable (PeerEvent) -> Bool
        let description: String
        let timeout: TimeInterval
        let resume: Resume
    }

    private let script: String
    private let condition = NSCondition()  // guards everything below
    private var stdoutBuffer = Data()
    private var ready = false
    private var stdoutClosed = false
    private var stderrClosed = false
    private var exitStatus: Int32?
    private var unexpected: [String] = []
    private var stderrData = Data()
    private var history: [PeerEvent] = []
    private var pending: [PeerEvent] = []
    private var waiters: [(id: UInt64, waiter: Waiter)] = []
    private var nextID: UInt64 = 0
    private var streams: [UInt64: AsyncStream<PeerEvent>.Continuation] = [:]

    init(script: String) { self.script = script }

    /// Reads `handle` on its own thread until EOF, handing each chunk (and finally an empty one)
    /// to `deliver`. The thread holds only the mailbox, so the PeerProcess can be deinitialised.
    static func startReader(_ handle: FileHandle, name: String, deliver: @escaping @Sendable (Data) -> Void) {
        let thread = Thread {
            while true {
                let chunk = handle.availableData
                deliver(chunk)
                if chunk.isEmpty { break }
            }
            try? handle.close()
        }
        thread.name = name
        thread.start()
    }

    // Reader side ---------------------------------------------------------------------------

    func stdout(_ chunk: Data) {
        var lines: [String] = []
        condition.lock()
        if chunk.isEmpty {
            if !stdoutBuffer.isEmpty {
                lines.append(String(decoding: stdoutBuffer, as: UTF8.self))
                stdoutBuffer.removeAll()
            }
        } else {
            stdoutBuffer.append(chunk)
            while let newline = stdoutBuffer.firstIndex(of: 0x0A) {
                let line = stdoutBuffer[stdoutBuffer.startIndex..<newline]
                lines.append(String(decoding: line, as: UTF8.self))
                stdoutBuffer.removeSubrange(stdoutBuffer.startIndex...newline)
            }
        }
        condition.unlock()
        for line in lines { receive(line: line.hasSuffix("\r") ? String(line.dropLast()) : line) }
        if chunk.isEmpty { closed(stdout: true) }
    }

    func stderr(_ chunk: Data) {
        if chunk.isEmpty {
            closed(stdout: false)
            return
        }
        condition.lock()
        stderrData.append(chunk)
        if stderrData.count > 256 * 1024 { stderrData.removeFirst(stderrData.count - 128 * 1024) }
        condition.unlock()
    }

    func processExited(status: Int32) {
        condition.lock()
        exitStatus = status
        condition.broadcast()
        condition.unlock()
    }

    private func receive(line: String) {
        condition.lock()
        if !ready {
            if line == "READY" {
                ready = true
                condition.broadcast()
            } else {
                unexpected.append(line)
            }
            condition.unlock()
            return
        }
        let event = PeerEvent(line: line)
        history.append(event)
        var resume: Resume?
        if let index = waiters.firstIndex(where: { $0.waiter.predicate(event) }) {
            resume = waiters.remove(at: index).waiter.resume
        } else {
            pending.append(event)
        }
        let continuations = Array(streams.values)
        condition.unlock()
        resume?(.success(event))
        for continuation in continuations { continuation.yield(event) }
    }

    private func closed(stdout: Bool) {
        condition.lock()
        if stdout { stdoutClosed = true } else { stderrClosed = true }
        condition.broadcast()
        guard stdoutClosed, stderrClosed else {
            condition.unlock()
            return
        }
        // Both pipes are done: the peer is gone, so no waiter can be satisfied any more.
        let failed = waiters
        waiters.removeAll()
        let continuations = Array(streams.values)
        streams.removeAll()
        condition.unlock()
        for (_, waiter) in failed {
            waiter.resume(.failure(exitedFailure(waitingFor: waiter.description)))
        }
        for continuation in continuations { continuation.finish() }
    }

    // Test side -----------------------------------------------------------------------------

    /// Returns nil once READY was printed, or the reason it was not within `timeout`.
    func waitUntilReady(timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !ready {
            if stdoutClosed {
                return "it exited (status \(exitStatus.map(String.init) ?? "?")) before printing READY"
            }
            if !condition.wait(until: deadline) && !ready {
                return "no READY within \(timeout) s"
            }
        }
        return nil
    }

    /// Registers a wait; `resume` is called exactly once (event, timeout, peer exit or cancel).
    func register(predicate: @escaping @Sendable (PeerEvent) -> Bool, timeout: TimeInterval,
                  description: String, resume: @escaping Resume) -> UInt64 {
        condition.lock()
        nextID += 1
        let id = nextID
        if let index = pending.firstIndex(where: predicate) {
            let event = pending.remove(at: index)
            condition.unlock()
            resume(.success(event))
            return id
        }
        if stdoutClosed && stderrClosed {
            condition.unlock()
            resume(.failure(exitedFailure(waitingFor: description)))
            return id
        }
        waiters.append((id, Waiter(predicate: predicate, description: description, timeout: timeout,
                                   resume: resume)))
        condition.unlock()
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
            guard let waiter = take(id) else { return }
            waiter.resume(.failure(PeerProcess.Failure.timeout(
                script: script, waitingFor: waiter.description, seconds: waiter.timeout,
                recent: recentLines(), stderr: stderrTail())))
        }
        return id
    }

    /// Ends a registered wait with `CancellationError`, if it is still waiting.
    func cancel(_ id: UInt64) {
        take(id)?.resume(.failure(CancellationError()))
    }

    private func take(_ id: UInt64) -> Waiter? {
        condition.lock()
        defer { condition.unlock() }
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).waiter
    }

    func makeStream() -> AsyncStream<PeerEvent> {
        let (stream, continuation) = AsyncStream<PeerEvent>.makeStream()
        condition.lock()
        if stdoutClosed && stderrClosed {
            condition.unlock()
            continuation.finish()
            return stream
        }
        nextID += 1
        let id = nextID
        streams[id] = continuation
        condition.unlock()
        continuation.onTermination = { [weak self] _ in self?.removeStream(id) }
        return stream
    }

    private func removeStream(_ id: UInt64) {
        condition.lock()
        streams[id] = nil
        condition.unlock()
    }

    var allEvents: [PeerEvent] {
        condition.lock()
        defer { condition.unlock() }
        return history
    }

    var unexpectedStdout: String {
        condition.lock()
        defer { condition.unlock() }
        return unexpected.joined(separator: "\n")
    }

    func stderrTail(limit: Int = 4000) -> String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: stderrData.suffix(limit), as: UTF8.self)
    }

    /// Unclaimed events first (what the test may have been looking for), then the last ones.
    private func recentLines() -> [String] {
        condition.lock()
        defer { condition.unlock() }
        let unclaimed = pending.suffix(20).map { "  unclaimed: \($0.line)" }
        let last = history.suffix(10).map { "  recent:    \($0.line)" }
        return unclaimed + last
    }

    private func exitedFailure(waitingFor description: String) -> PeerProcess.Failure {
        condition.lock()
        let status = exitStatus
        condition.unlock()
        return .exited(script: script, waitingFor: description, status: status, recent: recentLines(),
                       stderr: stderrTail())
    }
}

/// Carries one result from a callback thread to a blocked waiter.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<PeerEvent, Error>?

    func set(_ value: Result<PeerEvent, Error>) {
        lock.lock()
        result = value
        lock.unlock()
    }

    func get() throws -> PeerEvent {
        lock.lock()
        defer { lock.unlock() }
        guard let result else { throw CancellationError() }
        return try result.get()
    }
}

/// Links a task's cancellation to a mailbox wait registered inside a continuation, whichever
/// happens first.
private final class CancellationTicket: @unchecked Sendable {
    private let lock = NSLock()
    private var id: UInt64?
    private var cancelled = false

    /// Records the wait; returns true if the task was already cancelled (cancel it now).
    func attach(_ id: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        self.id = id
        return cancelled
    }

    /// Marks the task cancelled; returns the wait to cancel if it is already registered.
    func cancel() -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        cancelled = true
        return id
    }
}
