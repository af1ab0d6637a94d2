import Foundation

/// What the interop tests wait for in a child process, as events rather than polls: its exit, and
/// the lines it prints. Each wait has a real-time bound (the only real time a test uses: a
/// safety limit, never a measurement).
enum ProcessEvents {
    /// Waits until `process` exits, at most `timeout` seconds; true when it did. A helper thread
    /// blocks in `waitUntilExit` and signals, so nothing polls.
    static func waitForExit(_ process: Process, timeout: TimeInterval) -> Bool {
        guard process.isRunning else { return true }
        let exited = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            process.waitUntilExit()
            exited.signal()
        }
        return exited.wait(timeout: .now() + timeout) == .success
    }

    /// Reads `handle` on its own thread and calls `line` with each line (without its newline),
    /// then `ended` when the other end closes.
    static func readLines(from handle: FileHandle, line: @escaping @Sendable (String) -> Void,
                          ended: @escaping @Sendable () -> Void = {}) {
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    line(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            ended()
        }
    }
}
