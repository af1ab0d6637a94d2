import BLE
import BLEHTTP
import BLEWire
import Foundation
import Synchronization

/// The `/sample` screen of `ble ui` (docs/SYSTEMS.md S2): the sample central's numbered
/// steps as they happen. A run is `SampleCentral.run`, the function `ble sample` runs, started
/// by `POST /api/sample/run`; each step it reports goes to every open page over
/// `GET /api/sample-events` and is kept, so a page opened (or reloaded) during or after a run
/// shows the run from its first step. One run at a time: the flow connects and writes, and two
/// at once would only get in each other's way.
public final class UISampleApp: Sendable {
    private struct State {
        /// The newest run's number (0 before the first).
        var run: UInt64 = 0
        var task: Task<Void, Never>?
        var running = false
        /// The newest run's events, for pages opened later.
        var events: [[UInt8]] = []
        /// The same as JSON objects' text, for `GET /api/sample`.
        var steps: [String] = []
        var viewers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        var nextViewer: UInt64 = 0
        /// Set by `stop`: no run starts after it, and a run whose start it overtook is cancelled.
        var stopped = false
    }

    /// Events kept of a run (a run of 20 notifications has about 35).
    static let keptEvents = 200
    /// The most notifications a run may ask for.
    static let maximumCount = 20

    private let central: Central
    private let token: String
    private let options: SampleCentral.Options
    private let state = Mutex(State())

    /// The screen over `central`; `options` are each run's defaults (`ble sample`'s).
    public init(central: Central, token: String, options: SampleCentral.Options = SampleCentral.Options()) {
        self.central = central
        self.token = token
        self.options = options
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) -> UIReply? {
        switch (request.method, request.path) {
        case ("GET", "/sample"), ("HEAD", "/sample"):
            return .response(UIAssets.page(title: "Sample central", body: UISampleAssets.body, token: token, scripts: ["sample.js"]))
        case ("GET", "/static/sample.js"), ("HEAD", "/static/sample.js"):
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UISampleAssets.script.utf8)))
        case ("GET", "/api/sample"), ("HEAD", "/api/sample"):
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "application/json")], body: Array(status().utf8)))
        case ("GET", "/api/sample-events"), ("HEAD", "/api/sample-events"):
            return .events(watch())
        case ("POST", "/api/sample/run"):
            return start(request.body)
        default:
            return nil
        }
    }

    /// Cancels a run under way (it disconnects), also one whose start is under way, ends every
    /// page's stream, and refuses every later run.
    public func stop() {
        let (task, viewers) = state.withLock { s -> (Task<Void, Never>?, [AsyncStream<[UInt8]>.Continuation]) in
            s.stopped = true
            defer { s.viewers = [:]; s.task = nil }
            return (s.task, Array(s.viewers.values))
        }
        task?.cancel()
        viewers.forEach { $0.finish() }
    }

    /// `{"run", "running", "steps": [...]}`: the newest run, as `GET /api/sample` gives it.
    func status() -> String {
        state.withLock { s in "{\"run\":\(s.run),\"running\":\(s.running),\"steps\":[\(s.steps.joined(separator: ","))]}" }
    }

    /// The run's options from a POST body (`{"count": N, "number": NNN, "address": "XX:…"}`,
    /// each optional), or the message saying what is wrong with it.
    static func options(from body: [UInt8], defaults: SampleCentral.Options) -> Result<SampleCentral.Options, UIRequestError> {
        var options = defaults
        guard !body.isEmpty else { return .success(options) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(UIRequestError("the body is not a JSON object"))
        }
        if let value = object["count"], !(value is NSNull) {
            guard let count = value as? Int, (1...maximumCount).contains(count) else {
                return .failure(UIRequestError("\"count\" is the number of notifications to take, 1 to \(maximumCount)"))
            }
            options.count = count
        }
        if let value = object["number"], !(value is NSNull) {
            guard let number = value as? Int, (0...999).contains(number) else {
                return .failure(UIRequestError("\"number\" is NNN of \"Write Data NNN\", 0 to 999"))
            }
            options.writeNumber = number
        }
        if let value = object["address"], !(value is NSNull), (value as? String)?.isEmpty != true {
            guard let text = value as? String, let address = BDAddress(string: text) else {
                return .failure(UIRequestError("\"address\" is XX:XX:XX:XX:XX:XX, the device to run against"))
            }
            options.target = address
        }
        return .success(options)
    }

    private func start(_ body: [UInt8]) -> UIReply {
        let options: SampleCentral.Options
        switch Self.options(from: body, defaults: self.options) {
        case let .success(o): options = o
        case let .failure(error): return Self.json(.object([("error", .string(error.description))]), status: .badRequest)
        }
        // The run's number, or the refusal: 503 once stopped, 409 while another run is under way.
        let claim = state.withLock { s -> (run: UInt64?, refusal: UIReply?) in
            guard !s.stopped else { return (nil, Self.json(.object([("error", .string("the server is stopping"))]), status: .serviceUnavailable)) }
            guard !s.running else {
                return (nil, Self.json(.object([("error", .string("a run is under way: wait for it to end"))]), status: HTTPStatus(409, "Conflict")))
            }
            s.run += 1
            s.running = true
            s.events = []
            s.steps = []
            return (s.run, nil)
        }
        guard let run = claim.run else { return claim.refusal ?? Self.json(.null, status: .internalServerError) }
        publish(run, .object([("type", .string("started")), ("run", .int(Int(run)))]), step: false)
        let central = self.central
        let task = Task(executorPreference: central.clock.taskExecutor) { [weak self] in
            do {
                let app = self
                let result = try await SampleCentral.run(using: central, options: options) { event in
                    app?.publish(run, Self.json(event, run: run), step: true)
                }
                self?.finish(run, .object([("type", .string("done")), ("run", .int(Int(run))),
                                           ("written", .string(String(decoding: result.written, as: UTF8.self))),
                                           ("notifications", .int(result.notifications.count))]))
            } catch {
                let message = error is CancellationError ? "stopped" : "\(error)"
                self?.finish(run, .object([("type", .string("error")), ("run", .int(Int(run))), ("message", .string(message))]))
            }
        }
        // A stop between the claim above and here found no task to cancel: this run is its to end.
        let overtaken = state.withLock { s -> Bool in
            guard !s.stopped else { return true }
            if s.run == run, s.running { s.task = task }
            return false
        }
        if overtaken { task.cancel() }
        return Self.json(.object([("run", .int(Int(run)))]))
    }

    /// One step as the page shows it: `SampleCentralLines`' number, label and text, and the
    /// terminal's whole line.
    static func json(_ event: SampleCentralEvent, run: UInt64) -> JSON {
        let (n, label, text) = SampleCentralLines.parts(of: event)
        return .object([("type", .string("step")), ("run", .int(Int(run))), ("step", n.map { .int($0) } ?? .null),
                        ("label", .string(label)), ("text", .string(text)), ("line", .string(SampleCentralLines.line(for: event)))])
    }

    private func finish(_ run: UInt64, _ event: JSON) {
        publish(run, event, step: true)
        state.withLock { s in
            guard s.run == run else { return }
            s.running = false
            s.task = nil
        }
    }

    /// Sends `event` (of run `run`) to every page and keeps it for pages opened later.
    private func publish(_ run: UInt64, _ event: JSON, step: Bool) {
        let text = event.text
        let bytes = ServerSentEvents.event(text, name: "sample")
        let viewers = state.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            guard s.run == run else { return [] }
            if s.events.count < Self.keptEvents {
                s.events.append(bytes)
                if step { s.steps.append(text) }
            }
            return Array(s.viewers.values)
        }
        viewers.forEach { $0.yield(bytes) }
    }

    /// A page's stream: the newest run so far, then each event as it comes.
    private func watch() -> AsyncStream<[UInt8]> {
        // A page that reads slowly keeps the newest events and loses older ones, never holding
        // the flow (which reports without waiting).
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(Self.keptEvents + 8))
        let id = state.withLock { s -> UInt64 in
            s.nextViewer += 1
            s.events.forEach { continuation.yield($0) }
            s.viewers[s.nextViewer] = continuation
            return s.nextViewer
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.viewers.removeValue(forKey: id) } }
        continuation.yield(ServerSentEvents.keepAlive)
        return stream
    }

    static func json(_ value: JSON, status: HTTPStatus = .ok) -> UIReply {
        .response(HTTPResponse(status, headers: [("Content-Type", "application/json")], body: Array(value.text.utf8)))
    }
}

/// What is wrong with a request's body, said so that the caller can fix it (answered 400 with
/// `{"error": …}`).
public struct UIRequestError: Error, Sendable, CustomStringConvertible {
    /// The message.
    public let description: String

    /// An error with `message`.
    public init(_ message: String) {
        description = message
    }
}
