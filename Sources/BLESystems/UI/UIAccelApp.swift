import BLE
import BLEHTTP
import BLEProfiles
import Foundation
import Synchronization

/// The `/accel` screens of `ble ui` (docs/SYSTEMS.md S4). `/accel` lists the devices the
/// charting central would list (named *ble*, `AccelerometerDeviceChoice`) from the device
/// list's scan; `/accel/ADDRESS` follows one: `AccelerometerCentral` connects, discovers
/// 0011/0012 and subscribes, and each sample reaches every open page over
/// `GET /api/accel-events/ADDRESS`, where the page draws the three lines. Pause
/// (`POST /api/accel/pause`) stops recording and showing samples for every page of that
/// device; the session so far downloads as CSV and SVG (`GET /api/accel-session/ADDRESS.csv`,
/// `.svg`, `AccelerometerRecording`), also after the link went down. One flow per address,
/// whatever the number of pages; it stops when the last page goes away.
public final class UIAccelApp: Sendable {
    /// Samples a page opened later is given: the chart's 30 s at 5 Hz.
    static let replayedSamples = 150
    /// The most samples a session keeps for its downloads (over five hours at 5 Hz); later
    /// ones are still charted, and the page is told once.
    static let maximumRecorded = 100_000
    /// How many devices' sessions are kept for download, live ones included: at most this many
    /// devices are followed at once (a page for one more is told so), and a new session
    /// replaces the oldest recording of a flow that has ended, never a live one's.
    static let keptRecordings = 8

    private let central: Central
    private let token: String
    private let devices: UIDevicesApp
    /// The flows, each session's `extra` saying whether it is paused: a page opened later
    /// gets the connection, the status and the pause, then the newest samples.
    private let flows = UIDeviceFlows(replayedState: ["connected", "status", "paused"], replayedRecent: UIAccelApp.replayedSamples, extra: false)
    /// Each device's latest session, kept after its flow ends so the page can still download it.
    private let recordings = Mutex<[(address: DeviceAddress, recording: AccelerometerRecording)]>([])

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

    /// Ends every flow and every page's stream; no flow starts after it.
    public func stop() {
        flows.stop()
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
        let limit = Self.replayedSamples
        let followed = flows.update(address) { session -> Bool in
            session.extra = paused
            session.keep(event, key: "paused", recentLimit: limit)
            return true
        }
        guard followed == true else {
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
    /// event; the first page starts the flow. One device more than `keptRecordings` is
    /// refused with an error event (the page does not ask again on an error).
    private func watch(_ address: DeviceAddress) -> AsyncStream<[UInt8]> {
        let refusal = Self.event("error", [("message", .string("\(Self.keptRecordings) devices are followed already: close one's page first"))])
        return flows.watch(address, limit: Self.keptRecordings, refusal: refusal) { start(address, $0) }
    }

    private func start(_ address: DeviceAddress, _ generation: UInt64) {
        // A new session: its recording replaces the last one of this device, and past the
        // limit the oldest of a flow that has ended goes (there is one: `watch` keeps the live
        // sessions within the limit). The lock order is sessions, then recordings.
        flows.withFollowed { followed in
            recordings.withLock { all in
                all.removeAll { $0.address == address }
                all.insert((address, AccelerometerRecording()), at: 0)
                while all.count > Self.keptRecordings, let i = all.lastIndex(where: { !followed($0.address) }) { all.remove(at: i) }
            }
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
            self?.flows.finish(address, generation)
        }
        flows.attach(task, to: address, generation: generation)
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
            let limit = Self.replayedSamples
            let full = flows.update(address, generation: generation) { session -> Bool in
                guard !session.extra else { return false }
                let recorded = record(address) { $0.record(event) }
                session.keep(Self.event("sample", [("t", .number(t)), ("x", .number(Double(sample.x))), ("y", .number(Double(sample.y))),
                                                   ("z", .number(Double(sample.z))), ("recorded", .int(recorded))]),
                             key: nil, recentLimit: limit)
                return recorded == 0
            }
            if full == true { send(address, generation, key: "full", Self.event("full", [("limit", .int(Self.maximumRecorded))]), once: true) }
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
        flows.send(address, generation, key: key, event, once: once)
    }
}
