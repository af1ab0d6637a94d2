import BLE
import BLEHTTP
import Synchronization

/// The `/devices` screen of `ble ui` and the API behind it: the scan list as `ble
/// scan` shows it, kept by `Central.watch` (devices age out after 10 s), served as a page, as
/// JSON (`GET /api/devices`) and as a Server-Sent Events stream of the whole list whenever it
/// changes (`GET /api/events`, at most four times a second, each browser getting the newest
/// list: a slow one skips lists rather than making anyone wait).
public final class UIDevicesApp: Sendable {
    private struct State {
        /// The watch's list, as its changes say.
        var devices: [DeviceAddress: ScannedDevice] = [:]
        var subscribers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let central: Central
    private let token: String
    private let state = Mutex(State())
    private let watcher = Mutex<Task<Void, Never>?>(nil)

    /// The app over `central`'s scan, its pages carrying `token`; `start` begins it.
    public init(central: Central, token: String) {
        self.central = central
        self.token = token
    }

    /// Starts scanning; the list updates until `stop`.
    public func start() {
        let central = self.central
        let task = Task(executorPreference: central.clock.taskExecutor) { [weak self] in
            var lastSent = Duration.zero - .seconds(1)
            // A connection attempt (another screen's) ends the running scan: watch again, after a
            // moment, for as long as the app runs.
            while !Task.isCancelled {
                do {
                    for try await change in central.watch() {
                        guard let self else { return }
                        self.state.withLock { s in
                            switch change {
                            case let .appeared(d), let .updated(d): s.devices[d.address] = d
                            case let .disappeared(d): s.devices[d.address] = nil
                            }
                        }
                        let now = central.clock.now()
                        if now - lastSent >= .milliseconds(250) {
                            lastSent = now
                            self.broadcast(now: now)
                        }
                    }
                } catch {
                    // The scan could not run (busy, or the controller went away): try again.
                }
                do { try await central.clock.sleep(for: .seconds(1)) } catch { return }
            }
        }
        watcher.withLock { $0 = task }
    }

    /// Stops scanning and ends every event stream.
    public func stop() {
        watcher.withLock { $0?.cancel(); $0 = nil }
        let subscribers = state.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        subscribers.forEach { $0.finish() }
    }

    /// The devices heard now, in no order: the list other screens choose from (`/accel`).
    public var scannedDevices: [ScannedDevice] { state.withLock { Array($0.devices.values) } }

    /// The devices now, strongest first, as the API's JSON array.
    public func devicesJSON(now: Duration) -> String {
        // Strongest first; equal RSSIs by address, so rows keep their places.
        let devices = state.withLock { $0.devices.values }.sorted {
            let (a, b) = ($0.rssi ?? -128, $1.rssi ?? -128)
            return a != b ? a > b : $0.address.address.rawValue < $1.address.address.rawValue
        }
        return JSON.array(devices.map { Self.json($0, now: now) }).text
    }

    /// One device: `ble scan --json`'s fields, with its age and the advertisement's summary.
    static func json(_ d: ScannedDevice, now: Duration) -> JSON {
        guard case var .object(fields) = ScanLines.json(d) else { return .null }
        fields.append(("ageSeconds", .number(Double((now - d.lastSeen).components.seconds))))
        fields.append(("summary", .string(d.advertisement.summary)))
        return .object(fields)
    }

    private func broadcast(now: Duration) {
        let event = ServerSentEvents.event(devicesJSON(now: now), name: "devices")
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for s in subscribers { s.yield(event) }
    }

    /// A new event stream: the list now, then every change.
    func subscribe() -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            s.subscribers[s.nextID] = continuation
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) } }
        continuation.yield(ServerSentEvents.event(devicesJSON(now: central.clock.now()), name: "devices"))
        return stream
    }

    /// Answers the routes of this screen; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) -> UIReply? {
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        switch request.path {
        case "/":
            // The token goes along: no cookie carries it (see `HTTPAccessPolicy`).
            return .response(HTTPResponse(.seeOther, headers: [("Location", "/devices?token=\(token.filter { $0.isHexDigit })")]))
        case "/devices":
            return .response(UIAssets.page(title: "Devices", body: UIAssets.devicesBody, token: token))
        case "/api/devices":
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "application/json")], body: Array(devicesJSON(now: central.clock.now()).utf8)))
        case "/api/events":
            return .events(subscribe())
        default:
            return UIAssets.asset(request.path).map { .response($0) }
        }
    }
}
