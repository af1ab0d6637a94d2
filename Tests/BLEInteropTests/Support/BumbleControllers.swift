import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Google Bumble's own Python LE controller (`bumble.controller.Controller`) as the interop
/// controller: two of them on one `bumble.link.LocalLink` (`bumble.apps.controllers`, which
/// takes exactly two transports), each a `tcp-server:` on a loopback port; our host on the
/// first, a Bumble peer on the second.
///
/// `BLE_TEST_BUMBLE_CONTROLLERS` chooses where they come from:
///   - `spawn` (what scripts/test.sh exports): every test starts its own
///     `python -m bumble.apps.controllers tcp-server:127.0.0.1:P1 tcp-server:127.0.0.1:P2` on
///     free ports and stops it by PID in its teardown. One process per test, because a Bumble
///     controller keeps everything from one host to the next: its HCI_Reset does nothing, a host
///     that goes away leaves its connections, scanning and advertising behind, and a tcp-server
///     transport feeds every client into one packet parser (a client that dies mid-packet
///     garbles the next one's first packet).
///   - `tcp:HOST:P1,tcp:HOST:P2`: controllers someone started; good for one test at a time.
/// Unset, the tests that use it skip.
final class BumbleControllers: @unchecked Sendable {
    /// Our side: `ours.rootcanal` is the first controller's `tcp:HOST:PORT` (what `--hci` and
    /// ``ServeProcess`` take), so the rootcanal tests' helpers work unchanged.
    let ours: InteropEnvironment
    /// The peer's side: `theirs.bumbleTransport` is `tcp-client:HOST:P2` (what ``PeerProcess``
    /// passes as `--transport`).
    let theirs: InteropEnvironment
    /// The controllers process we started (nil for controllers given by address).
    private let process: Process?
    /// Its stderr (Bumble's log, warnings and up), for failure messages.
    let logFile: URL?

    static let variable = "BLE_TEST_BUMBLE_CONTROLLERS"

    private init(ours: InteropEnvironment, theirs: InteropEnvironment, process: Process?, logFile: URL?) {
        self.ours = ours
        self.theirs = theirs
        self.process = process
        self.logFile = logFile
    }

    deinit { stop() }

    /// Reads the environment and starts (or finds) the two controllers. Throws `XCTSkip` when
    /// `BLE_TEST_BUMBLE_CONTROLLERS` is unset.
    static func start(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> BumbleControllers {
        guard let value = environment[variable], !value.isEmpty else {
            throw XCTSkip("""
                Bumble controller interop test skipped: \(variable) is not set. Run `scripts/test.sh` \
                (it exports \(variable)=spawn: each test starts `python -m bumble.apps.controllers` \
                on free ports), or set it to spawn or to tcp:127.0.0.1:P1,tcp:127.0.0.1:P2.
                """)
        }
        let python = URL(fileURLWithPath: environment["BLE_TEST_PYTHON"]
            ?? InteropEnvironment.repositoryRoot.appendingPathComponent(".venv/bin/python").path)
        let peers = URL(fileURLWithPath: environment["BLE_TEST_PEERS"]
            ?? InteropEnvironment.repositoryRoot.appendingPathComponent("Tests/BLEInteropTests/peers").path)
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw InteropEnvironment.ConfigurationError.missingFile(variable: "BLE_TEST_PYTHON", path: python.path)
        }
        func side(_ host: String, _ port: UInt16) -> InteropEnvironment {
            InteropEnvironment(rootcanal: "tcp:\(host):\(port)", host: host, port: port, python: python, peers: peers)
        }
        if value == "spawn" {
            var last = ""
            for _ in 0..<3 {
                let ports = try freePorts(python: python)
                let log = FileManager.default.temporaryDirectory
                    .appendingPathComponent("bumble-controllers-\(getpid())-\(ports[0]).log")
                let process = Process()
                process.executableURL = python
                process.arguments = ["-m", "bumble.apps.controllers"] + ports.map { "tcp-server:127.0.0.1:\($0)" }
                var child = ProcessInfo.processInfo.environment
                child["PYTHONDONTWRITEBYTECODE"] = "1"
                process.environment = child
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
                let handle = try FileHandle(forWritingTo: log)
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = handle
                process.standardError = handle
                try process.run()
                try? handle.close()
                let controllers = BumbleControllers(ours: side("127.0.0.1", ports[0]), theirs: side("127.0.0.1", ports[1]),
                                                    process: process, logFile: log)
                if try ports.allSatisfy({ try waitListen(python: python, pid: process.processIdentifier, port: $0) }) {
                    return controllers
                }
                last = controllers.logTail()
                controllers.stop()
            }
            throw XCTSkip("could not start bumble.apps.controllers on free ports (3 attempts); log:\n\(last)")
        }
        let specs = value.split(separator: ",").map(String.init)
        let parsed = specs.compactMap { spec -> (String, UInt16)? in
            let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0] == "tcp", !parts[1].isEmpty, let port = UInt16(parts[2]), port != 0 else { return nil }
            return (parts[1], port)
        }
        guard parsed.count == 2, specs.count == 2 else {
            throw InteropEnvironment.ConfigurationError.malformedRootcanal("\(variable)=\(value) (want spawn, or tcp:HOST:P1,tcp:HOST:P2)")
        }
        return BumbleControllers(ours: side(parsed[0].0, parsed[0].1), theirs: side(parsed[1].0, parsed[1].1), process: nil, logFile: nil)
    }

    /// SIGTERM to the controllers process we started, SIGKILL 2 s later; removes its log.
    /// Idempotent; does nothing for controllers given by address.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if !ProcessEvents.waitForExit(process, timeout: 2) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The last lines of the controllers' log (empty when we did not start them).
    func logTail(lines: Int = 40) -> String {
        guard let logFile, let text = try? String(contentsOf: logFile, encoding: .utf8) else { return "" }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Two free loopback ports, from scripts/lib/netutil.py (as scripts/test.sh picks rootcanal's).
    private static func freePorts(python: URL) throws -> [UInt16] {
        let netutil = InteropEnvironment.repositoryRoot.appendingPathComponent("scripts/lib/netutil.py")
        let result = try ProcessRunner.run(python, arguments: [netutil.path, "free-ports", "2"], timeout: 30)
        let ports = result.stdout.split(separator: "\n").compactMap { UInt16($0) }
        guard result.succeeded, ports.count == 2 else { throw XCTSkip("netutil.py free-ports failed: \(result)") }
        return ports
    }

    /// Whether `pid` itself listens on `port` within 10 s (netutil.py wait-listen reads /proc).
    private static func waitListen(python: URL, pid: Int32, port: UInt16) throws -> Bool {
        let netutil = InteropEnvironment.repositoryRoot.appendingPathComponent("scripts/lib/netutil.py")
        return try ProcessRunner.run(python, arguments: [netutil.path, "wait-listen", "\(pid)", "\(port)", "10"], timeout: 20).succeeded
    }
}

extension XCTestCase {
    /// Two fresh Bumble controllers on one link (see ``BumbleControllers``), stopped in teardown.
    /// What the controllers logged (warnings and up: unsupported commands, packets for no
    /// connection) is printed then, so a run's output names what Bumble's controller lacked.
    func startBumbleControllers() throws -> BumbleControllers {
        let controllers = try BumbleControllers.start()
        let name = self.name
        addTeardownBlock {
            controllers.stop()
            let log = controllers.logTail(lines: 60).trimmingCharacters(in: .whitespacesAndNewlines)
            if !log.isEmpty { print("--- \(name): bumble.apps.controllers logged:\n\(log)") }
            if let file = controllers.logFile { try? FileManager.default.removeItem(at: file) }
        }
        return controllers
    }
}
