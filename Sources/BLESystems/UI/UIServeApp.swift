import BLE
import BLEHTTP
import BLEProfiles
import BLEWire
import Foundation
import Synchronization

/// The `/serve` screen of `ble ui`: runs one of the `ble serve` profiles on the
/// controller the other screens use (`PeripheralManager(sharingControllerWith:)`: one host in
/// both roles, Core spec Vol 6 Part B §1.1), and shows the centrals connected to it and its log,
/// the events `ble serve --json` prints, live over `GET /api/serve-events`.
///
/// One profile at a time: the controller has one advertising set, and two profiles' services in
/// one database would be one device serving both. Starting installs the profile's services
/// and advertises; stopping stops advertising, disconnects the centrals connected to the
/// profile (the links the other screens made as a central stay), and removes the services, so
/// the next start finds the database as it was. A stop that comes while a start is under way
/// is carried out when the start's install ends (the start is answered 409, the stop with the
/// stopped state); after `stop`, no start is taken.
public final class UIServeApp: Sendable {
    /// The profiles `/serve` offers by default, by `ble serve`'s names.
    public static let defaultProfiles: [any ServeProfile.Type] = [
        TestServeProfile.self, HeartRateServeProfile.self, BatteryServeProfile.self,
        EchoServeProfile.self, SampleServeProfile.self, AccelerometerServeProfile.self,
    ]

    private struct Running {
        let profile: String
        let name: String
        let address: DeviceAddress?
        let services: [GATTServiceHandles]
        /// Where the services there before the start begin: a stop removes every other one, also
        /// those the profile added while it ran (`ble serve test`'s database change).
        let baseline: Set<UInt16>
        let task: Task<Void, Never>
    }

    private enum Phase {
        case idle
        /// A start is under way: other starts are refused meanwhile. `stopAsked`: a stop came
        /// meanwhile; the start undoes itself when its install ends, and the stop then answers.
        case starting(stopAsked: Bool)
        /// A stop is under way: starts are refused, other stops wait for it.
        case stopping
        case running(Running)
    }

    private struct State {
        var phase = Phase.idle
        /// The centrals connected to the running profile, by link id, with their ATT_MTU.
        var centrals: [UInt64: (central: ConnectedCentral, mtu: Int?)] = [:]
        /// The newest log events, for pages opened later.
        var log: [[UInt8]] = []
        /// When the newest start began, on the host's clock: log events carry their time since.
        var started = Duration.zero
        var viewers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        var nextViewer: UInt64 = 0
        /// Set by `stop` (the server shuts down): no profile starts after it.
        var closed = false
        /// Stops waiting for the start or stop under way to end (the phase to be idle).
        var waiters: [CheckedContinuation<StopStep, Never>] = []
    }

    /// Log events a page opened later is given.
    static let keptLog = 200
    /// The longest device name taken (the GAP Device Name's limit, Vol 3 Part C §12.1).
    static let maximumNameLength = 248

    private let manager: PeripheralManager
    private let token: String
    /// The profiles offered (`defaultProfiles`; tests add their own).
    private let profiles: [any ServeProfile.Type]
    private let state = Mutex(State())

    /// The screen serving `profiles` on `central`'s controller, its page carrying `token`.
    public init(central: Central, token: String, profiles: [any ServeProfile.Type] = UIServeApp.defaultProfiles) {
        self.manager = PeripheralManager(sharingControllerWith: central)
        self.token = token
        self.profiles = profiles
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) async -> UIReply? {
        switch (request.method, request.path) {
        case ("GET", "/serve"), ("HEAD", "/serve"):
            return .response(UIAssets.page(title: "Serve", body: UIServeAssets.body, token: token, scripts: ["serve.js"]))
        case ("GET", "/static/serve.js"), ("HEAD", "/static/serve.js"):
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UIServeAssets.script.utf8)))
        case ("GET", "/api/serve"), ("HEAD", "/api/serve"):
            return Self.json(status())
        case ("GET", "/api/serve-events"), ("HEAD", "/api/serve-events"):
            return .events(watch())
        case ("POST", "/api/serve/start"):
            switch Self.startRequest(request.body, profiles: profiles) {
            case let .success((type, name)): return await start(type, name: name)
            case let .failure(error): return Self.json(.object([("error", .string(error.description))]), status: .badRequest)
            }
        case ("POST", "/api/serve/stop"):
            return await stopProfile()
        default:
            return nil
        }
    }

    /// Stops the running profile (as `POST /api/serve/stop`; one being started is stopped once
    /// its start ends), refuses every later start, and ends every page's stream.
    public func stop() async {
        state.withLock { $0.closed = true }
        _ = await stopProfile()
        let viewers = state.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            defer { s.viewers = [:] }
            return Array(s.viewers.values)
        }
        viewers.forEach { $0.finish() }
    }

    /// The profile and device name a start asks for (`{"profile": NAME, "name": NAME}`), or what
    /// is wrong with the body.
    static func startRequest(_ body: [UInt8], profiles: [any ServeProfile.Type] = defaultProfiles) -> Result<(any ServeProfile.Type, String?), UIRequestError> {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(UIRequestError("the body is not a JSON object: send {\"profile\": NAME}"))
        }
        let names = profiles.map { $0.name }.joined(separator: ", ")
        guard let profile = object["profile"] as? String else { return .failure(UIRequestError("\"profile\" is missing: choose \(names)")) }
        guard let type = profiles.first(where: { $0.name == profile }) else {
            return .failure(UIRequestError("unknown profile '\(profile)': choose \(names)"))
        }
        guard let value = object["name"], !(value is NSNull), (value as? String)?.isEmpty != true else { return .success((type, nil)) }
        guard let name = value as? String else { return .failure(UIRequestError("\"name\" is the device name, a string")) }
        guard name.utf8.count <= maximumNameLength, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return .failure(UIRequestError("\"name\" is at most \(maximumNameLength) bytes of UTF-8 without control characters"))
        }
        return .success((type, name))
    }

    /// `{"profiles": [...], "running": {...} or null, "centrals": [...]}`, as `GET /api/serve`
    /// gives it.
    func status() -> JSON {
        let profiles = self.profiles
        return state.withLock { Self.status($0, profiles: profiles) }
    }

    private static func status(_ s: State, profiles: [any ServeProfile.Type]) -> JSON {
        let running: JSON
        if case let .running(r) = s.phase {
            running = .object([("profile", .string(r.profile)), ("name", .string(r.name)),
                               ("address", .optional(r.address.map { $0.address.description })),
                               ("addressType", .optional(r.address.map { $0.type == .public ? "public" : "random" }))])
        } else {
            running = .null
        }
        let centrals = s.centrals.values.sorted { $0.central.id < $1.central.id }.map { c in
            JSON.object([("address", .string(c.central.address.description)), ("connection", .int(Int(c.central.id))), ("mtu", c.mtu.map { .int($0) } ?? .null)])
        }
        let profiles = profiles.map { p in JSON.object([("name", .string(p.name)), ("summary", .string(p.summary))]) }
        var (starting, stopping) = (false, false)
        switch s.phase {
        case let .starting(stopAsked): (starting, stopping) = (!stopAsked, stopAsked)
        case .stopping: stopping = true
        case .idle, .running: break
        }
        return .object([("profiles", .array(profiles)), ("running", running), ("busy", .bool(starting || stopping)),
                        ("starting", .bool(starting)), ("stopping", .bool(stopping)), ("centrals", .array(centrals))])
    }

    private func start<P: ServeProfile>(_ type: P.Type, name: String?) async -> UIReply {
        let refusal = state.withLock { s -> UIReply? in
            guard !s.closed else { return Self.json(.object([("error", .string("the server is stopping"))]), status: .serviceUnavailable) }
            guard case .idle = s.phase else { return Self.json(.object([("error", .string("a profile is being served: stop it first"))]), status: Self.conflict) }
            s.phase = .starting(stopAsked: false)
            s.centrals = [:]
            s.log = []
            s.started = self.manager.clock.now()
            return nil
        }
        if let refusal { return refusal }
        publishState()
        let name = name ?? (P.name == AccelerometerServeProfile.name ? AccelerometerProfile.localName : "SwiftBLE")
        let manager = self.manager
        let log = ServeLog { [weak self] json, text in self?.publishLog(json: json, text: text) }
        let before = Set(await manager.services.map(\.range.lowerBound))
        var profile = P()
        var added: [GATTServiceHandles] = []
        do {
            try await profile.install(on: manager)
            added = await manager.services.filter { !before.contains($0.range.lowerBound) }
            // The event stream before advertising, so the first central's connection is in it.
            let events = await manager.events
            let (data, response) = profile.advertisement(name: name)
            try await manager.startAdvertising(data.shorteningLocalName(toFit: AdvertisingData.legacyLimit), scanResponse: response)
            let address = await manager.address
            let running = profile
            // The events wait behind this gate until "ready" is logged, so the log says "ready"
            // before the events it buffered (as `ble serve` does), whatever order the tasks run.
            let (gate, opening) = AsyncStream<Never>.makeStream()
            let task = Task(executorPreference: manager.clock.taskExecutor) { [weak self] in
                for await _ in gate {}
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await event in events {
                            self?.note(event)
                            log.log(event)
                        }
                    }
                    group.addTask { try? await running.run(on: manager, log: log) }
                    await group.waitForAll()
                }
            }
            let started = Running(profile: P.name, name: name, address: address, services: added, baseline: before, task: task)
            // A stop that came during the start is carried out now, as if it came after it.
            let undo = state.withLock { s -> Bool in
                if case .starting(stopAsked: true) = s.phase {
                    s.phase = .stopping
                    return true
                }
                s.phase = .running(started)
                return false
            }
            if undo {
                opening.finish()
                await tearDown(started)
                return Self.json(.object([("error", .string("stopped while starting"))]), status: Self.conflict)
            }
            log.line("ready", [("profile", .string(P.name)), ("name", .string(name)), ("address", .optional(address.map { $0.address.description }))],
                     text: "serving \(P.name) as \"\(name)\" at \(address.map { "\($0)" } ?? "?")")
            opening.finish()
            publishState()
            return Self.json(status())
        } catch {
            // What the install added before it failed too (`added` is set only once it is done).
            if added.isEmpty { added = await manager.services.filter { !before.contains($0.range.lowerBound) } }
            for service in added.reversed() { try? await manager.remove(service) }
            let waiters = state.withLock { s -> [CheckedContinuation<StopStep, Never>] in
                s.phase = .idle
                defer { s.waiters = [] }
                return s.waiters
            }
            waiters.forEach { $0.resume(returning: .waited) }
            log.line("error", [("error", .string("\(error)"))], text: "could not start \(P.name): \(error)")
            publishState()
            return Self.json(.object([("error", .string("could not start \(P.name): \(error)"))]), status: .internalServerError)
        }
    }

    /// What a stop does, decided under the state's lock: refuse (nothing is served), tear the
    /// running profile down, or wait for the start or stop under way to end.
    private enum StopStep { case refuse, tearDown(Running), waited }

    private func stopProfile() async -> UIReply {
        // The decision and, when it is to wait, the waiter's registration happen under one
        // lock: otherwise the start could end, and another begin, before the waiter is there,
        // and this stop would wait for a stop nobody asks for. The step is the continuation's
        // result, not a variable the closure assigns: Swift 6.3.1's release build crashes
        // (signal 11 while splitting this coroutine) on the captured, mutated enum.
        let step = await withCheckedContinuation { (c: CheckedContinuation<StopStep, Never>) in
            let decided = state.withLock { s -> StopStep? in
                switch s.phase {
                case .idle: return .refuse
                case let .running(r):
                    s.phase = .stopping
                    return .tearDown(r)
                case .starting:
                    s.phase = .starting(stopAsked: true)
                    s.waiters.append(c)
                    return nil
                case .stopping:
                    s.waiters.append(c)
                    return nil
                }
            }
            if let decided { c.resume(returning: decided) } else { publishState() }
        }
        switch step {
        case .refuse:
            return Self.json(.object([("error", .string("no profile is being served"))]), status: Self.conflict)
        case let .tearDown(running):
            await tearDown(running)
        case .waited:
            break
        }
        return Self.json(status())
    }

    /// Ends `running` (the phase is `.stopping`): advertising off, its centrals disconnected,
    /// its services removed, its task ended; then idle, and the stops waiting answer.
    private func tearDown(_ running: Running) async {
        publishState()
        try? await manager.stopAdvertising()
        // Only the centrals connected to this profile: the links the other screens made as a
        // central are not the profile's to end.
        for central in await manager.connectedCentrals { try? await manager.disconnect(central) }
        for service in running.services.reversed() { try? await manager.remove(service) }
        running.task.cancel()
        await running.task.value
        // What the profile added while it ran (a database change, perhaps one made between the
        // removals above and the cancel): with its task ended, nothing adds more.
        for service in await manager.services.reversed() where !running.baseline.contains(service.range.lowerBound) {
            try? await manager.remove(service)
        }
        let waiters = state.withLock { s -> [CheckedContinuation<StopStep, Never>] in
            s.phase = .idle
            s.centrals = [:]
            defer { s.waiters = [] }
            return s.waiters
        }
        publishLog(json: JSON.object([("event", .string("stopped")), ("profile", .string(running.profile))]).text, text: "stopped \(running.profile)")
        publishState()
        waiters.forEach { $0.resume(returning: .waited) }
    }

    /// Keeps the list of connected centrals as the manager's events say.
    private func note(_ event: PeripheralManagerEvent) {
        let changed = state.withLock { s -> Bool in
            switch event {
            case let .connected(c): s.centrals[c.id] = (c, nil)
            case let .disconnected(c, _): s.centrals[c.id] = nil
            case let .mtuChanged(c, mtu):
                guard s.centrals[c.id] != nil else { return false }
                s.centrals[c.id]?.mtu = mtu
            default: return false
            }
            return true
        }
        if changed { publishState() }
    }

    private func publishState() {
        let profiles = self.profiles
        let viewers = state.withLock { s -> ([AsyncStream<[UInt8]>.Continuation], [UInt8]) in
            (Array(s.viewers.values), Self.stateEvent(s, profiles: profiles))
        }
        viewers.0.forEach { $0.yield(viewers.1) }
    }

    private static func stateEvent(_ s: State, profiles: [any ServeProfile.Type]) -> [UInt8] {
        guard case var .object(fields) = status(s, profiles: profiles) else { return [] }
        fields.insert(("type", .string("state")), at: 0)
        return ServerSentEvents.event(JSON.object(fields).text, name: "serve")
    }

    /// One log line: `ServeLog`'s JSON object as `entry`, its line for people, and `t`, the
    /// seconds since the profile was started.
    private func publishLog(json: String, text: String) {
        let now = manager.clock.now()
        let viewers = state.withLock { s -> ([AsyncStream<[UInt8]>.Continuation], [UInt8]) in
            let t = JSON.number(((now - s.started) / .milliseconds(1)).rounded() / 1000).text
            let event = ServerSentEvents.event("{\"type\":\"log\",\"t\":\(t),\"line\":\(JSON.string(text).text),\"entry\":\(json)}", name: "serve")
            s.log.append(event)
            if s.log.count > Self.keptLog { s.log.removeFirst(s.log.count - Self.keptLog) }
            return (Array(s.viewers.values), event)
        }
        viewers.0.forEach { $0.yield(viewers.1) }
    }

    /// A page's stream: the state and the log so far, then each change.
    private func watch() -> AsyncStream<[UInt8]> {
        // A page that reads slowly keeps the newest events and loses older ones, never holding
        // the radio.
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(Self.keptLog + 16))
        let profiles = self.profiles
        let id = state.withLock { s -> UInt64 in
            s.nextViewer += 1
            continuation.yield(Self.stateEvent(s, profiles: profiles))
            s.log.forEach { continuation.yield($0) }
            s.viewers[s.nextViewer] = continuation
            return s.nextViewer
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.viewers.removeValue(forKey: id) } }
        return stream
    }

    static let conflict = HTTPStatus(409, "Conflict")

    static func json(_ value: JSON, status: HTTPStatus = .ok) -> UIReply {
        .response(HTTPResponse(status, headers: [("Content-Type", "application/json")], body: Array(value.text.utf8)))
    }
}
