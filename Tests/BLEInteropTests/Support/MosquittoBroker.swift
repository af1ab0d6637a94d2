import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real Eclipse Mosquitto broker for one test: `mosquitto -c CONFIG` on a free loopback port,
/// with its config, password file, certificates, persistence database and log in a temporary
/// directory of its own.
///
/// `scripts/test.sh` exports `BLE_TEST_MOSQUITTO=/usr/sbin/mosquitto` (Debian's mosquitto
/// package); unset or `0`, the tests that use a broker skip. The command-line clients
/// (`mosquitto_sub`, `mosquitto_pub`, `mosquitto_passwd`) are looked for next to the broker, in
/// `../bin` from it and on PATH (``MosquittoTools``).
///
/// Every wait has a real-time bound and waits for an event: the broker is ready when it has
/// logged that it runs and a TCP connect to its port succeeds; it is gone when the process has
/// exited. The process is stopped by PID, never by name.
///
/// Started as root, the broker is told `user root`: otherwise mosquitto 2 drops to the
/// `mosquitto` user, which cannot read the test's 0700 directory.
final class MosquittoBroker: @unchecked Sendable {
    /// A user name and password the broker accepts (its password file holds exactly this one).
    struct Credentials: Sendable, Hashable {
        let user: String
        let password: String
    }

    /// How the broker is set up; combine with the `with…` methods, e.g.
    /// `.tls.withPassword(user: "gw", password: "secret").withPersistence()`.
    struct Configuration: Sendable, Hashable {
        /// When set, `allow_anonymous false` and a `password_file` holding only these
        /// credentials (made with `mosquitto_passwd -b -c`); when nil, `allow_anonymous true`.
        var credentials: Credentials?
        /// TLS on the listener: a CA and a server certificate (for `IP:127.0.0.1` and
        /// `DNS:localhost`) made with `openssl`; clients pass ``MosquittoBroker/caFile``.
        var usesTLS: Bool
        /// `persistence true` with the database in the broker's directory and
        /// `autosave_interval 1`, so ``MosquittoBroker/restart()`` keeps persistent sessions,
        /// their subscriptions and their queued QoS 1/2 messages, and retained messages.
        var persistence: Bool
        /// `max_queued_messages`: how many messages a disconnected persistent session may have
        /// queued (mosquitto's default, 1000, is too few for the gateway's bulk tests).
        var maxQueuedMessages: Int
        /// `log_type all` (every packet, one line each) rather than errors, warnings, notices
        /// and information only.
        var logsPackets: Bool
        /// `max_packet_size`: the largest packet the broker takes or sends (it tells MQTT 5
        /// clients in CONNACK); nil leaves mosquitto's default.
        var maxPacketSize: Int?

        init(credentials: Credentials? = nil, usesTLS: Bool = false, persistence: Bool = false,
             maxQueuedMessages: Int = 100_000, logsPackets: Bool = true, maxPacketSize: Int? = nil) {
            self.credentials = credentials
            self.usesTLS = usesTLS
            self.persistence = persistence
            self.maxQueuedMessages = maxQueuedMessages
            self.logsPackets = logsPackets
            self.maxPacketSize = maxPacketSize
        }

        /// Plain MQTT, anyone may connect.
        static let anonymous = Configuration()
        /// Plain MQTT, only `user` with `password` may connect.
        static func password(user: String, password: String) -> Configuration {
            Configuration(credentials: Credentials(user: user, password: password))
        }
        /// MQTT over TLS, anyone may connect.
        static let tls = Configuration(usesTLS: true)

        /// The same, but only `user` with `password` may connect.
        func withPassword(user: String, password: String) -> Configuration {
            var copy = self
            copy.credentials = Credentials(user: user, password: password)
            return copy
        }

        /// The same, over TLS.
        func withTLS() -> Configuration {
            var copy = self
            copy.usesTLS = true
            return copy
        }

        /// The same, with `max_packet_size` set.
        func withMaxPacketSize(_ size: Int) -> Configuration {
            var copy = self
            copy.maxPacketSize = size
            return copy
        }

        /// The same, with (or without) persistence.
        func withPersistence(_ persistence: Bool = true) -> Configuration {
            var copy = self
            copy.persistence = persistence
            return copy
        }
    }

    /// Why a broker did not start, restart or stop; the description carries its log tail.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The environment variable that names the broker binary.
    static let variable = "BLE_TEST_MOSQUITTO"

    /// How long a start or restart may take until the broker accepts connections.
    static let readyTimeout: TimeInterval = 10
    /// How long a broker has after SIGTERM (it saves its database then) before SIGKILL.
    static let stopTimeout: TimeInterval = 10

    let configuration: Configuration
    /// The loopback port it listens on; the same after ``restart()``.
    let port: UInt16
    /// The broker's temporary directory (config, log, password file, certificates, database).
    let directory: URL
    /// The CA certificate that signed the server's (TLS only): what a client passes as
    /// `--cafile`/`--ca`.
    let caFile: URL?
    /// The `log_dest file` of the broker.
    let logFile: URL
    /// What the process printed itself (before its log file is open, such as a config error).
    let outputFile: URL
    private let binary: URL
    private let configFile: URL

    /// Guards `process` and `removed`.
    private let lock = NSLock()
    /// The running (or last) broker process; nil after ``stop()``.
    private var process: Process?
    /// ``stop()`` ran: the directory is gone, and ``restart()`` throws.
    private var removed = false

    /// The host name clients connect to: the one the server certificate is checked against for
    /// TLS (`localhost`, which the certificate covers besides `IP:127.0.0.1`), else `127.0.0.1`.
    var host: String { configuration.usesTLS ? "localhost" : "127.0.0.1" }

    /// `mqtt://127.0.0.1:PORT`, or `mqtts://localhost:PORT` for TLS.
    var url: String { "\(configuration.usesTLS ? "mqtts" : "mqtt")://\(host):\(port)" }

    /// The credentials the broker accepts (nil: anonymous).
    var credentials: Credentials? { configuration.credentials }

    /// The broker's process ID while it runs.
    var pid: Int32? {
        lock.withLock { process?.isRunning == true ? process?.processIdentifier : nil }
    }

    /// Whether the broker process is running.
    var isRunning: Bool { pid != nil }

    private init(configuration: Configuration, port: UInt16, directory: URL, caFile: URL?, binary: URL) {
        self.configuration = configuration
        self.port = port
        self.directory = directory
        self.caFile = caFile
        self.binary = binary
        logFile = directory.appendingPathComponent("mosquitto.log")
        outputFile = directory.appendingPathComponent("mosquitto.out")
        configFile = directory.appendingPathComponent("mosquitto.conf")
    }

    deinit { stop() }

    // MARK: - Environment

    /// Whether `BLE_TEST_MOSQUITTO` names a broker (set, and not `0`).
    static var isAvailable: Bool { (try? binary()) != nil }

    /// The broker binary from `BLE_TEST_MOSQUITTO`. Throws `XCTSkip` when the variable is unset,
    /// empty or `0`, and a configuration error when it names no executable.
    static func binary(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        guard let value = environment[variable], !value.isEmpty, value != "0" else {
            throw XCTSkip("""
                MQTT broker test skipped: \(variable) is not set. Run `scripts/test.sh` (it installs \
                Debian's mosquitto and exports \(variable)=/usr/sbin/mosquitto), or set it yourself.
                """)
        }
        guard FileManager.default.isExecutableFile(atPath: value) else {
            throw InteropEnvironment.ConfigurationError.missingFile(variable: variable, path: value)
        }
        return URL(fileURLWithPath: value)
    }

    /// Throws `XCTSkip` when no broker is configured (see ``binary(_:)``).
    static func skipUnlessAvailable() throws { _ = try binary() }

    // MARK: - Start

    /// Writes the broker's files into a new temporary directory and starts it on a free loopback
    /// port; returns once it accepts connections (at most ``readyTimeout``). A port lost to
    /// another process between picking and binding is retried on another (3 attempts). Throws
    /// `XCTSkip` without `BLE_TEST_MOSQUITTO`.
    static func start(_ configuration: Configuration = .anonymous,
                      environment: [String: String] = ProcessInfo.processInfo.environment) throws -> MosquittoBroker {
        let binary = try binary(environment)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mosquitto-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        guard !directory.path.contains(where: \.isWhitespace) else {
            try? FileManager.default.removeItem(at: directory)
            throw Failure("the temporary directory \(directory.path) has white space, which mosquitto.conf cannot take")
        }
        do {
            if let credentials = configuration.credentials {
                try writePasswordFile(credentials, to: directory.appendingPathComponent("passwords"), environment: environment)
            }
            let caFile = configuration.usesTLS ? try MosquittoCertificates.make(in: directory) : nil
            if configuration.persistence {
                try FileManager.default.createDirectory(at: directory.appendingPathComponent("persistence"),
                                                        withIntermediateDirectories: true)
            }
            var last = ""
            for _ in 0..<3 {
                let port = try freePort(environment)
                let broker = MosquittoBroker(configuration: configuration, port: port, directory: directory,
                                             caFile: caFile, binary: binary)
                try broker.writeConfig()
                do {
                    try broker.launch()
                    return broker
                } catch let failure as Failure {
                    last = failure.description
                    broker.stopProcess()
                    broker.lock.withLock { broker.removed = true }  // the directory is shared by the next attempt
                }
            }
            throw Failure("could not start mosquitto on a free port (3 attempts); last:\n\(last)")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// The same, without holding a thread of Swift's cooperative pool while the broker starts.
    static func start(_ configuration: Configuration = .anonymous,
                      environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> MosquittoBroker {
        try await offPool { try start(configuration, environment: environment) }
    }

    /// SIGTERM (mosquitto saves its database on the way out), waits for the exit (SIGKILL after
    /// ``stopTimeout``), and starts it again on the same port with the same config and
    /// database; returns once it accepts connections. Also starts a broker ``kill()`` ended.
    /// Throws when SIGTERM did not end it (it was killed, and saved nothing).
    func restart() throws {
        guard !lock.withLock({ removed }) else { throw Failure("restart() after stop(): the broker's directory is gone") }
        guard stopProcess() else {
            throw Failure("mosquitto did not exit within \(Self.stopTimeout) s of SIGTERM and was killed; log:\n\(logTail())")
        }
        try launch()
    }

    /// The same, without holding a thread of Swift's cooperative pool while the broker restarts.
    func restart() async throws {
        try await Self.offPool { try self.restart() }
    }

    // MARK: - Stop

    /// SIGKILL, as a crash: nothing is saved beyond the last autosave (up to about 2 s old with
    /// persistence). The directory stays, so ``restart()`` brings it back.
    func kill() {
        guard let process = lock.withLock({ process }), process.isRunning else { return }
        send(SIGKILL, to: process)
        process.waitUntilExit()
    }

    /// SIGTERM, SIGKILL after ``stopTimeout``, reaps the process and removes the directory (and
    /// with it the log: read ``logTail(lines:)`` first). Idempotent.
    func stop() {
        stopProcess()
        let remove = lock.withLock { () -> Bool in
            defer { removed = true; process = nil }
            return !removed
        }
        if remove { try? FileManager.default.removeItem(at: directory) }
    }

    /// The last `lines` lines of the broker's log, after anything the process printed itself
    /// (empty once ``stop()`` removed them).
    func logTail(lines: Int = 40) -> String {
        func tail(_ url: URL) -> String {
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { return "" }
            return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
        }
        let output = tail(outputFile).trimmingCharacters(in: .whitespacesAndNewlines)
        let log = tail(logFile)
        return output.isEmpty ? log : "\(output)\n\(log)"
    }

    // MARK: - Process

    /// Starts `mosquitto -c CONFIG` and waits until it is ready (see ``waitUntilReady(_:logOffset:)``).
    private func launch() throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: logFile.path))?[.size] as? NSNumber
        let logOffset = size?.intValue ?? 0
        if !FileManager.default.fileExists(atPath: outputFile.path) {
            _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        }
        let output = try FileHandle(forWritingTo: outputFile)
        defer { try? output.close() }
        output.seekToEndOfFile()
        let process = Process()
        process.executableURL = binary
        process.arguments = ["-c", configFile.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.runWithSignalsUnblocked()  // else an async caller's blocked SIGTERM is inherited
        lock.withLock { self.process = process }
        try waitUntilReady(process, logOffset: logOffset)
    }

    /// Waits, at most ``readyTimeout``, until the broker has logged `mosquitto version … running`
    /// (it does once every listener is open; before that a connect could reach another owner of
    /// the port) and a TCP connect to its port succeeds. Throws, with the log tail, when the
    /// process exits first (a port taken meanwhile: `Address already in use`) or time runs out.
    /// The probe connection closes without a CONNECT: the log shows `Client <unknown> closed its
    /// connection`, or on TLS `Client connection from 127.0.0.1 failed: … unexpected eof`.
    private func waitUntilReady(_ process: Process, logOffset: Int) throws {
        let deadline = Date().addingTimeInterval(Self.readyTimeout)
        var logged = false
        while Date() < deadline {
            guard process.isRunning else {
                process.waitUntilExit()
                throw Failure("mosquitto exited with status \(process.terminationStatus) before it accepted connections on port \(port); log:\n\(logTail())")
            }
            if !logged { logged = logSays("running", after: logOffset) }
            if logged, Self.connects(port: port) { return }
            usleep(20_000)  // between looks at a starting process, within the deadline
        }
        throw Failure("mosquitto did not accept connections on port \(port) within \(Self.readyTimeout) s; log:\n\(logTail())")
    }

    /// Whether the log, from byte `offset` on (the part this start wrote), has a
    /// `mosquitto version … <word>` line.
    private func logSays(_ word: String, after offset: Int) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: logFile) else { return false }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: UInt64(offset))) != nil, let data = try? handle.readToEnd() else { return false }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").contains {
            $0.contains("mosquitto version") && $0.hasSuffix(" \(word)")
        }
    }

    /// SIGTERM, SIGKILL after ``stopTimeout``, reaped. Leaves the directory. False when it took
    /// SIGKILL (then it saved nothing on the way out).
    @discardableResult
    private func stopProcess() -> Bool {
        guard let process = lock.withLock({ process }), process.isRunning else { return true }
        send(SIGTERM, to: process)
        let exited = ProcessEvents.waitForExit(process, timeout: Self.stopTimeout)
        if !exited { send(SIGKILL, to: process) }
        process.waitUntilExit()
        return exited
    }

    // MARK: - Files

    /// `mosquitto.conf` for this port and configuration.
    private func writeConfig() throws {
        var lines = ["# Written by Tests/BLEInteropTests/Support/MosquittoBroker.swift for one test."]
        if geteuid() == 0 { lines.append("user root") }
        lines += [
            "listener \(port) 127.0.0.1",
            "allow_anonymous \(configuration.credentials == nil)",
            "max_queued_messages \(configuration.maxQueuedMessages)",
            "log_dest file \(logFile.path)",
            "log_timestamp_format %H:%M:%S",
        ]
        lines.append(configuration.logsPackets ? "log_type all" : "log_type error\nlog_type warning\nlog_type notice\nlog_type information")
        if let size = configuration.maxPacketSize { lines.append("max_packet_size \(size)") }
        if configuration.credentials != nil {
            lines.append("password_file \(directory.appendingPathComponent("passwords").path)")
        }
        if let caFile {
            lines += [
                "cafile \(caFile.path)",
                "certfile \(directory.appendingPathComponent("server.crt").path)",
                "keyfile \(directory.appendingPathComponent("server.key").path)",
            ]
        }
        if configuration.persistence {
            lines += [
                "persistence true",
                "persistence_location \(directory.appendingPathComponent("persistence").path)/",
                "autosave_interval 1",
            ]
        }
        try (lines.joined(separator: "\n") + "\n").write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// `mosquitto_passwd -b -c FILE USER PASSWORD`, then mode 0600.
    private static func writePasswordFile(_ credentials: Credentials, to file: URL, environment: [String: String]) throws {
        let tool = try MosquittoTools.tool("mosquitto_passwd", environment)
        let result = try ProcessRunner.run(tool, arguments: ["-b", "-c", file.path, credentials.user, credentials.password],
                                           timeout: 30)
        guard result.succeeded else { throw Failure("mosquitto_passwd failed: \(result)") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }

    // MARK: - Ports

    /// A free loopback port, from scripts/lib/netutil.py (as scripts/test.sh picks rootcanal's
    /// and ``BumbleControllers`` theirs), run by `BLE_TEST_PYTHON` or the system's python3 (the
    /// script needs the standard library only).
    private static func freePort(_ environment: [String: String]) throws -> UInt16 {
        let candidates: [String?] = [environment["BLE_TEST_PYTHON"], "/usr/bin/python3", ProcessRunner.which("python3")?.path]
        guard let python = candidates.compactMap({ $0 }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure("no python3 to run scripts/lib/netutil.py free-ports with")
        }
        let netutil = InteropEnvironment.repositoryRoot.appendingPathComponent("scripts/lib/netutil.py")
        let result = try ProcessRunner.run(URL(fileURLWithPath: python), arguments: [netutil.path, "free-ports", "1"], timeout: 30)
        guard result.succeeded, let port = result.stdout.split(separator: "\n").first.flatMap({ UInt16($0) }), port != 0 else {
            throw Failure("netutil.py free-ports failed: \(result)")
        }
        return port
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted (closed again at once).
    static func connects(port: UInt16) -> Bool {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Runs `body` on a thread of its own and awaits it (the broker's waits block).
    private static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// Sends `signal` to `process` by its PID (a free function: inside ``MosquittoBroker`` the name
/// `kill` is its own method).
private func send(_ signal: Int32, to process: Process) {
    _ = kill(process.processIdentifier, signal)
}

extension XCTestCase {
    /// A broker for this test (see ``MosquittoBroker``), stopped in teardown; when the test
    /// failed, the broker's log tail is printed first. Throws `XCTSkip` without
    /// `BLE_TEST_MOSQUITTO`.
    func startMosquitto(_ configuration: MosquittoBroker.Configuration = .anonymous) throws -> MosquittoBroker {
        let broker = try MosquittoBroker.start(configuration)
        stopInTeardown(broker)
        return broker
    }

    /// The same, without holding a thread of Swift's cooperative pool while the broker starts.
    func startMosquitto(_ configuration: MosquittoBroker.Configuration = .anonymous) async throws -> MosquittoBroker {
        let broker = try await MosquittoBroker.start(configuration)
        stopInTeardown(broker)
        return broker
    }

    /// Stops `broker` in teardown, printing its log tail first when the test failed.
    private func stopInTeardown(_ broker: MosquittoBroker) {
        addTeardownBlock { [self] in
            if let run = testRun, run.totalFailureCount > 0 {  // hasSucceeded is false until the run stops
                print("--- \(name): mosquitto on port \(broker.port) logged:\n\(broker.logTail(lines: 80))")
            }
            broker.stop()
        }
    }
}
