import BLE
import BLEHTTP
import BLEHost
import BLEProfiles
import Foundation
import Synchronization

/// The `/accel` screens of `ble ui` (issue 14, SEEDS.md S4). `/accel` lists the devices the
/// charting central would list (named *ble*, `AccelerometerDeviceChoice`) from the device
/// list's scan; `/accel/ADDRESS` follows one: `AccelerometerCentral` connects, discovers
/// 0011/0012 and subscribes, and each sample reaches every open page over
/// `GET /api/accel-events/ADDRESS`, where the page draws the three lines. Pause
/// (`POST /api/accel/pause`) stops recording and showing samples for every page of that
/// device; the session so far downloads as CSV and SVG (`GET /api/accel-session/ADDRESS.csv`,
/// `.svg`, `AccelerometerRecording`), also after the link went down. One flow per address,
/// whatever the number of pages; it stops when the last page goes away.
public final class UIAccelApp: Sendable {
    private struct Session {
        /// Which flow this is: one ending after its session was replaced must not touch the new one.
        let generation: UInt64
        var started = false
        var task: Task<Void, Never>?
        var viewers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        /// What a page opened later needs: the newest state events and the newest samples.
        var state: [String: [UInt8]] = [:]
        var recent: [[UInt8]] = []
        var paused = false
    }

    /// Samples a page opened later is given: the chart's 30 s at 5 Hz.
    static let replayedSamples = 150
    /// The most samples a session keeps for its downloads (over five hours at 5 Hz); later
    /// ones are still charted, and the page is told once.
    static let maximumRecorded = 100_000
    /// How many devices' sessions are kept for download after their flows ended.
    static let keptRecordings = 8

    private let central: Central
    private let token: String
    private let devices: UIDevicesApp
    private let sessions = Mutex<[DeviceAddress: Session]>([:])
    /// Each device's latest session, kept after its flow ends so the page can still download it.
    private let recordings = Mutex<[(address: DeviceAddress, recording: AccelerometerRecording)]>([])
    private let nextViewer = Atomic<UInt64>(0)
    /// Set by `stop` (under the sessions' lock): no flow starts after it.
    private let stopped = Atomic<Bool>(false)

    /// The screens over `central`, listing from `devices`' scan; its pages carry `token`.
    public init(central: Central, token: String, devices: UIDevicesApp) {
        self.central = central
        self.token = token
        self.devices = devices
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) -> UIReply? {
        if request.method == "POST" {
            return request.path == "/api/accel/pause" ? pause(request.body) : nil
        }
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        let path = request.path
        if path == "/accel" {
            return .response(UIAssets.page(title: "Accelerometer", body: UIAccelAssets.listBody, token: token, scripts: ["accel.js"]))
        }
        if path == "/api/accel/devices" {
            return UIPeripheralApp.json(candidatesJSON())
        }
        if path.hasPrefix("/accel/") {
            let text = String(path.dropFirst("/accel/".count))
            guard let address = UIPeripheralApp.address(text) else {
                var page = UIAssets.page(title: "Accelerometer", body: UIAccelAssets.badAddressBody, token: token, scripts: ["accel.js"])
                page.status = .notFound
                return .response(page)
            }
            return .response(UIAssets.page(title: "Accelerometer \(address.address)", body: UIAccelAssets.sessionBody(address),
                                           token: token, scripts: ["accel.js"]))
        }
        if let text = Self.suffix(path, after: "/api/accel-events/") {
            guard let address = UIPeripheralApp.address(text) else { return Self.badAddress(text) }
            // HEAD changes nothing: the stream's head, without starting a session (which would
            // connect and replace the device's recording).
            if request.method == "HEAD" { return .events(AsyncStream { $0.finish() }) }
            return .events(watch(address))
        }
        if let text = Self.suffix(path, after: "/api/accel-session/") {
            for (ext, type) in [(".csv", "text/csv; charset=utf-8"), (".svg", "image/svg+xml")] where text.hasSuffix(ext) {
                guard let address = UIPeripheralApp.address(String(text.dropLast(ext.count))) else { return Self.badAddress(text) }
                return download(address, ext: ext, type: type)
            }
            return .response(.text(.notFound, "a session downloads as ADDRESS.csv or ADDRESS.svg\n"))
        }
        return nil
    }

    /// Ends every flow and every page's stream.
    public func stop() {
        let all = sessions.withLock { s -> [Session] in
            stopped.store(true, ordering: .relaxed)
            defer { s = [:] }
            return Array(s.values)
        }
        for s in all {
            s.task?.cancel()
            s.viewers.values.forEach { $0.finish() }
        }
    }

    static func suffix(_ path: String, after prefix: String) -> String? {
        path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
    }

    static func badAddress(_ text: String) -> UIReply {
        UIPeripheralApp.json(.object([("error", .string(UIAccelAssets.badAddressMessage))]), status: .notFound)
    }

    /// The devices the charting central lists, first heard first, each saying whether it
    /// advertises 0011 (a name alone does not make an accelerometer).
    func candidatesJSON() -> JSON {
        let now = central.clock.now()
        return .array(AccelerometerDeviceChoice.candidates(devices.scannedDevices).map { d in
            guard case var .object(fields) = UIDevicesApp.json(d, now: now) else { return .null }
            fields.append(("accelerometer", .bool(AccelerometerDeviceChoice.advertisesService(d))))
            return .object(fields)
        })
    }

    // MARK: Pause and downloads

    private func pause(_ body: [UInt8]) -> UIReply {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        guard let text = object["address"] as? String, let address = UIPeripheralApp.address(text) else {
            return UIPeripheralApp.json(.object([("error", .string("the body needs \"address\": \"XX:XX:XX:XX:XX:XX/public|random\""))]), status: .badRequest)
        }
        // Missing means pause; anything but a boolean (`"false"`, `null`) is no guess to make.
        let given = object["paused"]
        guard let paused = given == nil ? true : given as? Bool else {
            return UIPeripheralApp.json(.object([("error", .string("\"paused\" must be true or false"))]), status: .badRequest)
        }
        let event = Self.event("paused", [("paused", .bool(paused))])
        // Under the lock, like each sample: a page sees no sample after this event.
        let followed = sessions.withLock { s -> Bool in
            guard var session = s[address] else { return false }
            session.paused = paused
            Self.keep(event, in: &session, key: "paused")
            s[address] = session
            return true
        }
        guard followed else {
            return UIPeripheralApp.json(.object([("error", .string("no page follows \(address) now: open /accel/\(address) first"))]), status: .notFound)
        }
        return UIPeripheralApp.json(.object([("paused", .bool(paused))]))
    }

    private func download(_ address: DeviceAddress, ext: String, type: String) -> UIReply {
        guard let recording = recordings.withLock({ $0.first { $0.address == address }?.recording }) else {
            return .response(.text(.notFound, "no session with \(address) to download: open /accel/\(address) first\n"))
        }
        let text = ext == ".csv" ? recording.csv() : recording.svg()
        let name = "accel-" + address.address.description.filter { $0 != ":" } + ext
        return .response(HTTPResponse(.ok, headers: [("Content-Type", type), ("Content-Disposition", "attachment; filename=\"\(name)\"")],
                                      body: Array(text.utf8)))
    }

    /// Changes the recording of `address`'s session; returns its sample count after, or 0 when
    /// it is full (or gone). Called under the sessions' lock when recording a sample: the lock
    /// order is sessions, then recordings.
    private func record(_ address: DeviceAddress, _ change: (inout AccelerometerRecording) -> Void) -> Int {
        recordings.withLock { all in
            guard let i = all.firstIndex(where: { $0.address == address }) else { return 0 }
            guard all[i].recording.samples.count < Self.maximumRecorded else { return 0 }
            change(&all[i].recording)
            return all[i].recording.samples.count
        }
    }

    // MARK: The flow

    /// A page's stream for `address`: the state so far and the newest samples, then every
    /// event; the first page starts the flow.
    private func watch(_ address: DeviceAddress) -> AsyncStream<[UInt8]> {
        // A page that reads slowly keeps the newest events and loses older ones, never holding
        // the radio.
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(Self.replayedSamples + 16))
        let id = nextViewer.add(1, ordering: .relaxed).newValue
        let starts = sessions.withLock { s -> UInt64?? in
            // The server stops: no flow for a page that asks now; its stream just ends.
            guard !stopped.load(ordering: .relaxed) else { return nil }
            var session = s[address] ?? Session(generation: id)
            for key in ["connected", "status", "paused"] { if let e = session.state[key] { continuation.yield(e) } }
            session.recent.forEach { continuation.yield($0) }
            session.viewers[id] = continuation
            let starts = session.started ? nil : session.generation
            session.started = true
            s[address] = session
            return .some(starts)
        }
        guard let starts else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.leave(address, id) }
        continuation.yield(ServerSentEvents.keepAlive)
        if let generation = starts { start(address, generation) }
        return stream
    }

    private func start(_ address: DeviceAddress, _ generation: UInt64) {
        // A new session: its recording replaces the last one of this device.
        recordings.withLock { all in
            all.removeAll { $0.address == address }
            all.insert((address, AccelerometerRecording()), at: 0)
            if all.count > Self.keptRecordings { all.removeLast(all.count - Self.keptRecordings) }
        }
        var options = AccelerometerCentralOptions()
        options.target = AddressArgument(address: address.address, type: address.type.peerType)
        let flow = AccelerometerCentral(central: central, options: options) { [weak self] event in
            self?.publish(address, generation, event)
        }
        let task = Task(executorPreference: central.clock.taskExecutor) { [weak self] in
            do {
                try await flow.run()
                self?.send(address, generation, key: "status", Self.event("error", [("message", .string("the flow with \(address) ended"))]))
            } catch {
                // Cancelled: the last page left, or the server stops; nothing to say.
                if Task.isCancelled { return }
                // Not an accelerometer, no such device, the link went down: the pages say why and
                // do not ask again (an event stream would reconnect on its own).
                self?.send(address, generation, key: "status", Self.event("error", [("message", .string("\(error)"))]))
            }
            self?.finish(address, generation)
        }
        let stale = sessions.withLock { s -> Bool in
            guard s[address]?.generation == generation else { return true }
            s[address]?.task = task
            return false
        }
        if stale { task.cancel() }
    }

    private func leave(_ address: DeviceAddress, _ id: UInt64) {
        let ending = sessions.withLock { s -> Task<Void, Never>?? in
            s[address]?.viewers[id] = nil
            guard let session = s[address], session.viewers.isEmpty else { return nil }
            s[address] = nil
            return .some(session.task)
        }
        // The last page went away: the flow stops (and disconnects).
        if case let .some(task) = ending { task?.cancel() }
    }

    /// The flow ended by itself: the pages' streams end, and a page opened later starts anew
    /// (the recording stays downloadable until then).
    private func finish(_ address: DeviceAddress, _ generation: UInt64) {
        let viewers = sessions.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            guard let session = s[address], session.generation == generation else { return [] }
            s[address] = nil
            return Array(session.viewers.values)
        }
        viewers.forEach { $0.finish() }
    }

    private func publish(_ address: DeviceAddress, _ generation: UInt64, _ event: AccelerometerCentralEvent) {
        switch event {
        case let .connecting(target):
            send(address, generation, key: "status", Self.event("connecting", [("address", .string("\(target)"))]))
        case let .connected(_, mtu):
            // The flow connects by address; the name is the one the device list heard.
            let name = devices.scannedDevices.first { $0.address.address == address.address }?.advertisement.localName
            send(address, generation, key: "connected", Self.event("connected", [("mtu", .int(mtu)), ("name", .optional(name))]))
        case .subscribed:
            send(address, generation, key: "status", Self.event("subscribed", []))
        case let .sample(sample, at):
            // Paused: neither recorded nor shown (the peripheral keeps sending; the flow keeps
            // the link and its silence watchdog). Decided, recorded and sent under the
            // sessions' lock, as a pause is: no page sees a sample after the pause event, and
            // none is recorded once a pause is answered.
            let t = Double(at.components.seconds) + Double(at.components.attoseconds) / 1e18
            let full = sessions.withLock { s -> Bool in
                guard var session = s[address], session.generation == generation, !session.paused else { return false }
                let recorded = record(address) { $0.record(event) }
                Self.keep(Self.event("sample", [("t", .number(t)), ("x", .number(Double(sample.x))), ("y", .number(Double(sample.y))),
                                                ("z", .number(Double(sample.z))), ("recorded", .int(recorded))]),
                          in: &session, key: nil)
                s[address] = session
                return recorded == 0
            }
            if full { send(address, generation, key: "full", Self.event("full", [("limit", .int(Self.maximumRecorded))]), once: true) }
        case let .malformed(value, error):
            send(address, generation, key: nil, Self.event("malformed", [("hex", .string(value.hexString)), ("error", .string("\(error)"))]))
        case .chose, .found, .scanning:
            // Only when choosing by scan; this flow has its target.
            _ = record(address) { $0.record(event) }
        }
    }

    /// `{"type": …, …}` as one `accel` event.
    static func event(_ type: String, _ fields: [(String, JSON)]) -> [UInt8] {
        ServerSentEvents.event(JSON.object([("type", .string(type))] + fields).text, name: "accel")
    }

    /// Sends `event` to the pages of `address`, and keeps it for pages opened later: under
    /// `key` (the newest of each kind of state), or among the newest samples. `once`: only if
    /// nothing is kept under `key` yet.
    private func send(_ address: DeviceAddress, _ generation: UInt64, key: String?, _ event: [UInt8], once: Bool = false) {
        sessions.withLock { s in
            guard var session = s[address], session.generation == generation else { return }
            if once, let key, session.state[key] != nil { return }
            Self.keep(event, in: &session, key: key)
            s[address] = session
        }
    }

    /// Keeps `event` in `session` and sends it to its pages. Called under the sessions' lock,
    /// so every page gets the events in the order they were decided; a yield never waits (a
    /// slow page's buffer drops its oldest).
    private static func keep(_ event: [UInt8], in session: inout Session, key: String?) {
        if let key {
            session.state[key] = event
        } else {
            session.recent.append(event)
            if session.recent.count > replayedSamples { session.recent.removeFirst(session.recent.count - replayedSamples) }
        }
        session.viewers.values.forEach { $0.yield(event) }
    }
}
