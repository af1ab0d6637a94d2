import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a finished (or timed-out) child process left behind.
struct ProcessResult: Sendable, CustomStringConvertible {
    /// Exit status, or the signal number for a process that was killed (see `timedOut`).
    let status: Int32
    let stdout: String
    let stderr: String
    /// True when the process did not end within the timeout and was terminated.
    let timedOut: Bool
    let duration: TimeInterval

    var succeeded: Bool { status == 0 && !timedOut }

    var description: String {
        "status \(status)\(timedOut ? " (timed out)" : "") after "
            + String(format: "%.2f", duration) + " s\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
    }
}

/// Runs a command to completion with a deadline, collecting stdout and stderr.
enum ProcessRunner {
    /// Runs `executable` and blocks until it exits or `timeout` passes (then SIGTERM, and SIGKILL
    /// 2 s later). `environment` entries are added to (and override) this process's environment.
    static func run(
        _ executable: URL,
        arguments: [String] = [],
        environment: [String: String] = [:],
        currentDirectory: URL? = nil,
        input: Data? = nil,
        timeout: TimeInterval = 30
    ) throws -> ProcessResult {
        let start = Date()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let stdout = Pipe()
        let stderr = Pipe()
        let stdin = input == nil ? nil : Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin ?? FileHandle.nullDevice
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()

        // Drain both pipes on their own threads so a chatty child never blocks on a full pipe.
        let out = PipeCollector(stdout.fileHandleForReading)
        let err = PipeCollector(stderr.fileHandleForReading)
        if let stdin, let input {
            let handle = stdin.fileHandleForWriting
            Thread {
                try? handle.write(contentsOf: input)
                try? handle.close()
            }.start()
        }

        var timedOut = false
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGTERM)
            if finished.wait(timeout: .now() + 2) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                finished.wait()
            }
        }
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus,
            stdout: String(decoding: out.wait(), as: UTF8.self),
            stderr: String(decoding: err.wait(), as: UTF8.self),
            timedOut: timedOut,
            duration: Date().timeIntervalSince(start))
    }

    /// The same, without holding a thread of Swift's cooperative pool while the child runs.
    static func run(
        _ executable: URL,
        arguments: [String] = [],
        environment: [String: String] = [:],
        currentDirectory: URL? = nil,
        input: Data? = nil,
        timeout: TimeInterval = 30
    ) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try run(executable, arguments: arguments, environment: environment,
                            currentDirectory: currentDirectory, input: input, timeout: timeout)
                })
            }.start()
        }
    }
}

/// Reads a pipe to EOF on a background thread.
private final class PipeCollector: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var data = Data()

    init(_ handle: FileHandle) {
        Thread { [self] in
            var collected = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                collected.append(chunk)
            }
            try? handle.close()
            data = collected
            done.signal()
        }.start()
    }

    /// Waits for EOF (a grandchild holding the pipe open is given 2 s more) and returns the data.
    func wait() -> Data {
        _ = done.wait(timeout: .now() + 2)
        return data
    }
}
