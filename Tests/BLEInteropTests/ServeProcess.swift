import Foundation
import XCTest

/// `ble serve PROFILE --json` running as a child process on the interop rootcanal, with its
/// JSON event lines collected so a test can wait for them.
final class ServeProcess: @unchecked Sendable {
    let address: StaticRandomAddress
    private let process = Process()
    private let lock = NSCondition()
    private var lines: [[String: Any]] = []
    private var taken = 0
    private var stderrText = ""
    private var ended = false

    init(profile: String, name: String = "SwiftPeer", arguments: [String] = [], environment: InteropEnvironment) throws {
        address = InteropEnvironment.nextStaticRandomAddress()
        process.executableURL = try BLETool.executableURL()
        process.arguments = ["serve", profile, "--json", "--name", name, "--address", address.description, "--hci", environment.rootcanal] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        Self.read(out.fileHandleForReading) { [weak self] line in self?.received(line) } ended: { [weak self] in self?.finish() }
        Self.read(err.fileHandleForReading) { [weak self] line in self?.receivedError(line) } ended: {}
        try waitFor("ready", timeout: 30)
    }

    deinit { stop() }

    /// SIGTERM, as Ctrl-C would; SIGKILL if it has not exited after 5 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    /// Waits for the next not-yet-taken event with this name that matches `predicate`.
    @discardableResult
    func waitFor(_ event: String, timeout: TimeInterval = 20, where predicate: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let i = lines.indices.dropFirst(taken).first(where: { lines[$0]["event"] as? String == event && predicate(lines[$0]) }) {
                taken = i + 1
                return lines[i]
            }
            if ended { throw ServeError("ble serve ended before \"\(event)\"; stderr: \(stderrText)") }
            if !lock.wait(until: deadline) {
                throw ServeError("no \"\(event)\" from ble serve within \(timeout) s; events: \(lines.suffix(10)); stderr: \(stderrText)")
            }
        }
    }

    /// Every event seen so far.
    var events: [[String: Any]] {
        lock.lock()
        defer { lock.unlock() }
        return lines
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

    private static func read(_ handle: FileHandle, line: @escaping @Sendable (String) -> Void, ended: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let text = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    line(text)
                }
            }
            ended()
        }
    }
}

struct ServeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
