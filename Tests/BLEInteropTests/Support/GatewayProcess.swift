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
        ProcessEvents.readLines(from: err.fileHandleForReading) { [lines] line in lines.append(line) }
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }

    /// Everything it printed on stderr so far.
    var log: [String] { lines.all }

    /// Waits (at most `timeout`) for the `count`-th stderr line containing `text`.
    @discardableResult
    func waitForLog(_ text: String, count: Int = 1, timeout: TimeInterval = 20) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let lines = log.filter { $0.contains(text) }
            if lines.count >= count { return lines[count - 1] }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw MosquittoClientError("gateway \(name) did not say '\(text)' within \(timeout) s; it said:\n\(log.joined(separator: "\n"))")
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

/// The lines a gateway printed, shared with the thread that reads them.
private final class GatewayLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
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
