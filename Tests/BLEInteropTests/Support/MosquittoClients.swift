import Foundation
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the Mosquitto command-line tools are: next to `BLE_TEST_MOSQUITTO`, in `../bin` from it
/// (Debian: the broker in /usr/sbin, the clients in /usr/bin), or on PATH.
enum MosquittoTools {
    /// The tool `name` (`mosquitto_sub`, `mosquitto_pub`, `mosquitto_passwd`).
    static func tool(_ name: String,
                     _ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        var candidates: [URL] = []
        if let broker = environment[MosquittoBroker.variable], broker.hasPrefix("/") {
            let directory = URL(fileURLWithPath: broker).deletingLastPathComponent()
            candidates.append(directory.appendingPathComponent(name))
            candidates.append(directory.deletingLastPathComponent().appendingPathComponent("bin").appendingPathComponent(name))
        }
        if let found = ProcessRunner.which(name) { candidates.append(found) }
        guard let tool = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MosquittoBroker.Failure("\(name) not found (Debian: apt-get install mosquitto-clients; scripts/test.sh does)")
        }
        return tool
    }
}

/// How a command-line client connects: the arguments `mosquitto_sub` and `mosquitto_pub` share.
struct MosquittoClientOptions: Sendable {
    var host: String
    var port: UInt16
    /// `-u USER -P PASSWORD`.
    var credentials: MosquittoBroker.Credentials?
    /// `--cafile FILE`: TLS, the server's certificate checked against this CA and `host`.
    var caFile: URL?
    /// `-V mqttv5` (else MQTT 3.1.1, the clients' default).
    var mqtt5: Bool
    /// `-i ID`.
    var clientID: String?
    /// `-c`: a persistent session (clean session false; in MQTT 5 a session that never
    /// expires). Needs a ``clientID``.
    var persistentSession: Bool
    /// Anything else, appended as is (`-k 5`, `--will-topic …`).
    var extraArguments: [String]

    init(host: String = "127.0.0.1", port: UInt16, credentials: MosquittoBroker.Credentials? = nil, caFile: URL? = nil,
         mqtt5: Bool = false, clientID: String? = nil, persistentSession: Bool = false, extraArguments: [String] = []) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.caFile = caFile
        self.mqtt5 = mqtt5
        self.clientID = clientID
        self.persistentSession = persistentSession
        self.extraArguments = extraArguments
    }

    /// Connects to `broker` as its configuration asks: its host and port, its credentials (if
    /// any), its CA file (TLS).
    init(broker: MosquittoBroker, mqtt5: Bool = false, clientID: String? = nil, persistentSession: Bool = false) {
        self.init(host: broker.host, port: broker.port, credentials: broker.credentials, caFile: broker.caFile,
                  mqtt5: mqtt5, clientID: clientID, persistentSession: persistentSession)
    }

    /// The command-line arguments.
    var arguments: [String] {
        var arguments = ["-h", host, "-p", "\(port)"]
        if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
        if let caFile { arguments += ["--cafile", caFile.path] }
        if mqtt5 { arguments += ["-V", "mqttv5"] }
        if let clientID { arguments += ["-i", clientID] }
        if persistentSession { arguments.append("-c") }
        return arguments + extraArguments
    }
}

/// One message a ``MosquittoSubscription`` received.
struct MosquittoMessage: Sendable, CustomStringConvertible {
    let topic: String
    /// The payload, byte for byte.
    let payload: Data
    /// The QoS it was delivered with (the lower of the publisher's and the subscription's).
    let qos: Int
    /// Whether it came as a retained message (delivered because of the subscription).
    let retained: Bool
    /// MQTT 5 `response-topic`, when the subscriber speaks MQTT 5 and the message had one.
    let responseTopic: String?
    /// MQTT 5 `correlation-data`, as text (mosquitto_sub prints it up to a NUL byte).
    let correlationData: String?
    /// MQTT 5 user properties (a key given twice keeps one value).
    let userProperties: [String: String]

    /// The payload as UTF-8 text (JSON and plain words in the gateway's tests).
    var text: String { String(decoding: payload, as: UTF8.self) }

    /// The payload as a JSON object, if it is one.
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: payload) as? [String: Any] }

    var description: String {
        let text = self.text
        return "\(topic) \(text.count > 200 ? String(text.prefix(200)) + "… (\(payload.count) bytes)" : text)"
    }

    /// Parses a line of `mosquitto_sub -F '%x\t%j'`: the payload in hex, a tab, and the message
    /// as JSON (topic, qos, retain, MQTT 5 properties). Nil for anything else (`-d` lines).
    init?(line: String) {
        guard let tab = line.firstIndex(of: "\t") else { return nil }
        let hex = line[..<tab].utf8
        guard hex.count % 2 == 0 else { return nil }
        var payload = Data(capacity: hex.count / 2)
        var high: UInt8?
        for character in hex {
            guard let nibble = Self.nibble(character) else { return nil }
            if let h = high { payload.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        // The JSON's payload field may hold raw bytes that are not UTF-8; the hex has them all.
        let json = Data(String(decoding: Data(line[line.index(after: tab)...].utf8), as: UTF8.self).utf8)
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
            let topic = object["topic"] as? String
        else { return nil }
        let properties = object["properties"] as? [String: Any] ?? [:]
        self.topic = topic
        self.payload = payload
        qos = (object["qos"] as? NSNumber)?.intValue ?? 0
        retained = (object["retain"] as? NSNumber)?.intValue == 1
        responseTopic = properties["response-topic"] as? String
        correlationData = properties["correlation-data"] as? String
        userProperties = (properties["user-properties"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

/// Why a client helper failed: a bound passed, the client ended, or the broker refused.
struct MosquittoClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `mosquitto_sub` as a child process, its messages collected so a test can wait for them.
///
/// It runs as `stdbuf -oL mosquitto_sub … -d -F '%x\t%j'`: `-d` prints `Subscribed (mid: 1): 1`
/// when the SUBACK arrives (line-buffered by stdbuf: mosquitto_sub flushes its messages but not
/// its debug lines), so ``start(_:topics:qos:timeout:)`` returns once the subscription is in
/// place; `%x\t%j` prints each message on one line, the payload in hex (exact bytes) and the
/// rest as JSON (topic, QoS, retain flag, MQTT 5 properties). A running mosquitto_sub
/// reconnects and subscribes again when its broker restarts (``waitUntilSubscribed(count:timeout:)``).
///
/// Waits are events: a reader thread appends each message and hands it to the waiters; each
/// wait is bounded by a timeout. Stopped by PID (SIGTERM: it disconnects cleanly, so a
/// persistent session stays on the broker).
final class MosquittoSubscription: Sendable {
    let topics: [String]
    let options: MosquittoClientOptions
    private let process: Process
    private let state = Mutex(State())

    /// What the reader threads collected, and who waits for what.
    private struct State {
        var messages: [MosquittoMessage] = []
        /// Indices of ``messages`` a `waitFor` has returned.
        var taken = Set<Int>()
        /// The reason codes of each SUBACK (one list per `Subscribed` line).
        var subacks: [[Int]] = []
        /// The last other lines of stdout (mosquitto_sub's `-d` log), for error messages.
        var debug: [String] = []
        var stderr: [String] = []
        /// Set once the process has exited and both pipes are closed.
        var exitStatus: Int32?
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    /// One pending wait: `attempt` looks at the state and, when it is done (found, or the
    /// process ended), resumes the waiting task and returns true; `fail` resumes it with an error.
    private struct Waiter: Sendable {
        let attempt: @Sendable (inout State) -> Bool
        let fail: @Sendable (any Error) -> Void
    }

    private init(topics: [String], options: MosquittoClientOptions, process: Process) {
        self.topics = topics
        self.options = options
        self.process = process
    }

    deinit { stop() }

    /// Starts `mosquitto_sub` on `topics` with `qos` and returns once the broker has granted the
    /// subscription (at most `timeout`). Throws when the client ends first (a refused
    /// connection: wrong password, untrusted certificate) or a topic is refused.
    static func start(_ options: MosquittoClientOptions, topics: [String], qos: Int = 0,
                      timeout: TimeInterval = 10) async throws -> MosquittoSubscription {
        let sub = try MosquittoTools.tool("mosquitto_sub")
        guard let stdbuf = ProcessRunner.which("stdbuf") else {
            throw MosquittoClientError("stdbuf (coreutils) not found: mosquitto_sub's `Subscribed` line would stay in its buffer")
        }
        let process = Process()
        process.executableURL = stdbuf
        process.arguments = ["-oL", sub.path] + options.arguments + topics.flatMap { ["-t", $0] }
            + ["-q", "\(qos)", "-d", "-F", "%x\\t%j"]
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.runWithSignalsUnblocked()  // else an async caller's blocked SIGTERM is inherited
        let subscription = MosquittoSubscription(topics: topics, options: options, process: process)
        let closed = DispatchGroup()
        closed.enter()
        closed.enter()
        // Weak: a subscription a test drops is stopped by its deinit, not kept alive by its readers.
        ProcessEvents.readLines(from: out.fileHandleForReading) { [weak subscription] in subscription?.received($0) }
            ended: { closed.leave() }
        ProcessEvents.readLines(from: err.fileHandleForReading) { [weak subscription] in subscription?.receivedError($0) }
            ended: { closed.leave() }
        closed.notify(queue: .global()) { [weak subscription] in
            process.waitUntilExit()
            subscription?.update { $0.exitStatus = process.terminationStatus }
        }
        do {
            try await subscription.waitUntilSubscribed(timeout: timeout)
        } catch {
            subscription.stop()
            throw error
        }
        return subscription
    }

    /// Every message received so far, in order.
    var messages: [MosquittoMessage] { state.withLock { $0.messages } }

    /// The process's exit status, once it has ended.
    var exitStatus: Int32? { state.withLock { $0.exitStatus } }

    /// Waits for the first message that matches `predicate` and no earlier `waitFor` returned,
    /// received before or after this call; at most `timeout`.
    @discardableResult
    func waitFor(_ what: String = "a matching message", timeout: TimeInterval = 10,
                 _ predicate: @escaping @Sendable (MosquittoMessage) -> Bool) async throws -> MosquittoMessage {
        try await wait(for: what, timeout: timeout) { state in
            guard let index = state.messages.indices.first(where: { !state.taken.contains($0) && predicate(state.messages[$0]) })
            else { return nil }
            state.taken.insert(index)
            return state.messages[index]
        }
    }

    /// Waits for the first message on `topic` (not returned before); at most `timeout`.
    @discardableResult
    func waitFor(topic: String, timeout: TimeInterval = 10) async throws -> MosquittoMessage {
        try await waitFor("a message on \(topic)", timeout: timeout) { $0.topic == topic }
    }

    /// Waits until at least `count` messages received so far match `predicate`; returns all
    /// that do (whether or not a `waitFor` returned them).
    @discardableResult
    func waitForCount(_ count: Int, timeout: TimeInterval = 10,
                      matching predicate: @escaping @Sendable (MosquittoMessage) -> Bool = { _ in true }) async throws -> [MosquittoMessage] {
        try await wait(for: "\(count) matching messages", timeout: timeout) { state in
            let matching = state.messages.filter(predicate)
            return matching.count >= count ? matching : nil
        }
    }

    /// Waits until the broker has granted this client's subscription `count` times in all (the
    /// first at start; once more after each reconnection, as after a broker restart).
    func waitUntilSubscribed(count: Int = 1, timeout: TimeInterval = 10) async throws {
        let topics = self.topics
        try await waitForOutcome("SUBACK #\(count)", timeout: timeout) { state -> Result<Void, any Error>? in
            if let refused = state.subacks.first(where: { $0.contains { $0 >= 0x80 } }) {
                return .failure(MosquittoClientError("the broker refused a subscription to \(topics): reason codes \(refused)"))
            }
            return state.subacks.count >= count ? .success(()) : nil
        }
    }

    /// SIGTERM by PID (mosquitto_sub disconnects cleanly), SIGKILL after 5 s, reaped. Idempotent.
    func stop() {
        guard process.isRunning else { return }
        _ = kill(process.processIdentifier, SIGTERM)
        if !ProcessEvents.waitForExit(process, timeout: 5) { _ = kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    // MARK: - Waiting

    private func wait<T: Sendable>(for what: String, timeout: TimeInterval,
                                   _ find: @escaping @Sendable (inout State) -> T?) async throws -> T {
        try await waitForOutcome(what, timeout: timeout) { state -> Result<T, any Error>? in
            find(&state).map { .success($0) }
        }
    }

    /// Waits until `evaluate` gives a result, the process ends (then throws), or `timeout`
    /// passes (throws, with what the client printed). The wait races a sleep of `timeout` in a
    /// task group; the loser is cancelled.
    private func waitForOutcome<T: Sendable>(_ what: String, timeout: TimeInterval,
                                             _ evaluate: @escaping @Sendable (inout State) -> Result<T, any Error>?) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await self.waitUnbounded(for: what, evaluate) }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                throw MosquittoClientError("no \(what) from mosquitto_sub \(self.topics) within \(timeout) s; \(self.report())")
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() else { throw CancellationError() }
            return result
        }
    }

    /// The wait itself, ended by a result, the end of the process or cancellation.
    private func waitUnbounded<T: Sendable>(for what: String,
                                            _ evaluate: @escaping @Sendable (inout State) -> Result<T, any Error>?) async throws -> T {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let topics = self.topics
                let waiter = Waiter(attempt: { state in
                    if let result = evaluate(&state) {
                        continuation.resume(with: result)
                        return true
                    }
                    guard let status = state.exitStatus else { return false }
                    continuation.resume(throwing: MosquittoClientError("""
                        mosquitto_sub \(topics) ended (status \(status)) before \(what); \
                        stderr: \(state.stderr.joined(separator: "\n")); log: \(state.debug.suffix(10).joined(separator: "\n"))
                        """))
                    return true
                }, fail: { continuation.resume(throwing: $0) })
                state.withLock { state in
                    if !waiter.attempt(&state) { state.waiters[id] = waiter }
                }
                // Cancelled before the waiter was in place: the cancellation handler found nothing.
                if Task.isCancelled { expire(id) }
            }
        } onCancel: {
            expire(id)
        }
    }

    /// Ends the wait `id` with `CancellationError`, if it is still pending.
    private func expire(_ id: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.fail(CancellationError())
    }

    /// Changes the state and lets every waiter look at it.
    private func update(_ change: @Sendable (inout State) -> Void) {
        state.withLock { state in
            change(&state)
            for (id, waiter) in state.waiters where waiter.attempt(&state) {
                state.waiters.removeValue(forKey: id)
            }
        }
    }

    /// What the client received and printed, for a timeout's message.
    private func report() -> String {
        state.withLock { state in
            "received: \(state.messages.suffix(10).map(\.description)); stderr: \(state.stderr.joined(separator: "\n")); "
                + "log: \(state.debug.suffix(10).joined(separator: "\n"))"
        }
    }

    // MARK: - Reading

    private func received(_ line: String) {
        if let message = MosquittoMessage(line: line) {
            update { $0.messages.append(message) }
        } else if line.hasPrefix("Subscribed (mid: "), let colon = line.range(of: "): ") {
            let codes = line[colon.upperBound...].split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            update { $0.subacks.append(codes) }
        } else {
            update { state in
                state.debug.append(line)
                if state.debug.count > 200 { state.debug.removeFirst(100) }
            }
        }
    }

    private func receivedError(_ line: String) {
        update { $0.stderr.append(line) }
    }
}

/// What `mosquitto_pub` sends.
enum MosquittoPayload: Sendable, ExpressibleByStringLiteral {
    /// `-m TEXT`.
    case text(String)
    /// `-s`, the bytes on stdin (any bytes, NUL included).
    case data(Data)
    /// `-f FILE` (a big payload).
    case file(URL)
    /// `-n`, a zero-length payload (clears a retained message).
    case empty

    init(stringLiteral value: String) { self = .text(value) }

    var arguments: [String] {
        switch self {
        case .text(let text): return ["-m", text]
        case .data: return ["-s"]
        case .file(let url): return ["-f", url.path]
        case .empty: return ["-n"]
        }
    }
}

/// Runs `mosquitto_pub` once (at most `timeout`) and returns how it ended: status 0 once the
/// broker has the message (for QoS 1, its PUBACK came), else the status and stderr. The MQTT 5
/// properties (`-D PUBLISH response-topic …`, `correlation-data`, `user-property`) turn on
/// `-V mqttv5`.
func mosquittoPublish(_ options: MosquittoClientOptions, topic: String, _ payload: MosquittoPayload,
                      qos: Int = 0, retain: Bool = false, responseTopic: String? = nil, correlationData: String? = nil,
                      userProperties: [(String, String)] = [], timeout: TimeInterval = 10) async throws -> ProcessResult {
    var options = options
    var properties: [String] = []
    if let responseTopic { properties += ["-D", "PUBLISH", "response-topic", responseTopic] }
    if let correlationData { properties += ["-D", "PUBLISH", "correlation-data", correlationData] }
    for (key, value) in userProperties { properties += ["-D", "PUBLISH", "user-property", key, value] }
    if !properties.isEmpty { options.mqtt5 = true }
    var arguments = options.arguments + ["-t", topic, "-q", "\(qos)"] + payload.arguments + properties
    if retain { arguments.append("-r") }
    var input: Data?
    if case .data(let data) = payload { input = data }
    return try await ProcessRunner.run(try MosquittoTools.tool("mosquitto_pub"), arguments: arguments,
                                       input: input, timeout: timeout)
}
