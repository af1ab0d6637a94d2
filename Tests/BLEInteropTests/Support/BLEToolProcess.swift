import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A long-running `ble` command (`serve`, `radio`) as a child process, with the JSON event lines
/// it prints (`--json`) collected so a test can wait for them.
class BLEToolProcess: @unchecked Sendable {
    /// What the tool is, for error messages ("ble serve").
    let name: String
    private let process = Process()
    private let lock = NSCondition()
    private var lines: [[String: Any]] = []
    private var taken = 0
    private var stderrText = ""
    private var ended = false

    init(_ arguments: [String]) throws {
        name = "ble " + (arguments.first ?? "")
        process.executableURL = try BLETool.executableURL()
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        ProcessEvents.readLines(from: out.fileHandleForReading) { [weak self] line in self?.received(line) } ended: { [weak self] in self?.finish() }
        ProcessEvents.readLines(from: err.fileHandleForReading) { [weak self] line in self?.receivedError(line) }
    }

    deinit { stop() }

    /// SIGTERM, as Ctrl-C would; SIGKILL if it has not exited after 5 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if !ProcessEvents.waitForExit(process, timeout: 5) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    /// Every event seen so far.
    var events: [[String: Any]] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    /// How many `event` lines have been printed so far.
    func count(_ event: String) -> Int {
        events.filter { $0["event"] as? String == event }.count
    }

    /// Waits for the next not-yet-taken event with this name that matches `predicate`.
    @discardableResult
    func waitFor(_ event: String, timeout: TimeInterval = 20, where predicate: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any] {
        try wait(for: "\"\(event)\"", timeout: timeout) { lines, taken in
            guard let i = lines.indices.dropFirst(taken).first(where: { lines[$0]["event"] as? String == event && predicate(lines[$0]) }) else { return nil }
            return (lines[i], i + 1)
        }
    }

    /// Waits until at least `count` lines of `event` were printed; returns the last of them.
    @discardableResult
    func waitForCount(_ event: String, count: Int, timeout: TimeInterval = 20) throws -> [String: Any] {
        try wait(for: "\(count)× \"\(event)\"", timeout: timeout) { lines, taken in
            let matching = lines.filter { $0["event"] as? String == event }
            guard matching.count >= count, let last = matching.last else { return nil }
            return (last, taken)
        }
    }

    /// Waits for the next not-yet-taken JSON line of any kind (e.g. a device `ble scan` heard).
    @discardableResult
    func waitForAnyLine(timeout: TimeInterval = 20) throws -> [String: Any] {
        try wait(for: "a JSON line", timeout: timeout) { lines, taken in
            lines.count > taken ? (lines[taken], taken + 1) : nil
        }
    }

    /// SIGINT, as Ctrl-C; waits up to `timeout` for the exit and returns its status (nil when
    /// the process is still running then: it is killed, and the caller fails the test).
    func interrupt(timeout: TimeInterval = 10) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGINT)
        if !ProcessEvents.waitForExit(process, timeout: timeout) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    /// Sends `number` (SIGUSR1, say) to the process, if it still runs.
    func signal(_ number: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, number)
    }

    /// Waits until `match` finds something in the lines (and the new "taken" mark).
    private func wait(for what: String, timeout: TimeInterval, _ match: ([[String: Any]], Int) -> ([String: Any], Int)?) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let (found, newTaken) = match(lines, taken) {
                taken = newTaken
                return found
            }
            if ended { throw ServeError("\(name) ended before \(what); stderr: \(stderrText)") }
            if !lock.wait(until: deadline) {
                throw ServeError("no \(what) from \(name) within \(timeout) s; events: \(lines.suffix(10)); stderr: \(stderrText)")
            }
        }
    }

    private func received(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return }
        lock.lock()
        lines.append(object)
        lock.broadcast()
        lock.unlock()
    }

    private func receivedError(_ line: String) {
        lock.lock()
        stderrText += line + "\n"
        lock.unlock()
    }

    private func finish() {
        lock.lock()
        ended = true
        lock.broadcast()
        lock.unlock()
    }
}

struct ServeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
