import BLE
import BLEHTTP
import BLEProfiles
import Synchronization

/// The `/heart-rate` screens of `ble ui` (docs/SYSTEMS.md S3). `/heart-rate` is the monitor
/// list: devices advertising 180D from the device list's scan (ageing out after 10 s), each
/// with its RSSI against the gate, where a click on one weaker than the gate is refused with
/// its RSSI. `/heart-rate/ADDRESS` follows one monitor: `HeartRateMonitor` connects, reads the
/// Body Sensor Location and subscribes, and its events reach every open page over
/// `GET /api/heart-rate-events/ADDRESS` (the big bpm number, contact, energy, RR intervals and
/// the chart are drawn by the page). One monitor flow per address, whatever the number of
/// pages; it stops when the last page goes away.
public final class UIHeartRateApp: Sendable {
    /// Measurements a page opened later is given (the chart's five minutes at 1 Hz).
    static let replayedMeasurements = 300

    private let central: Central
    private let token: String
    private let options: HeartRateMonitorOptions
    /// The monitor flows: a page opened later gets the connection, the location and the
    /// status (the status last: the page's `connected` handler would write over it), then the
    /// newest measurements.
    private let flows = UIDeviceFlows(replayedState: ["connected", "location", "status"], replayedRecent: UIHeartRateApp.replayedMeasurements, extra: ())

    /// The screens over `central`, with the monitor flow's `options` (its RSSI gate above all).
    public init(central: Central, token: String, options: HeartRateMonitorOptions = HeartRateMonitorOptions()) {
        self.central = central
        self.token = token
        self.options = options
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) -> UIReply? {
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        if request.path == "/heart-rate" {
            return .response(UIAssets.page(title: "Heart rate", body: UIHeartRateAssets.listBody(minimumRSSI: options.minimumRSSI),
                                           token: token, scripts: ["heart-rate.js"]))
        }
        if request.path.hasPrefix("/heart-rate/"), let address = UIPeripheralApp.address(String(request.path.dropFirst("/heart-rate/".count))) {
            return .response(UIAssets.page(title: "Heart rate \(address.address)", body: UIHeartRateAssets.monitorBody(address, minimumRSSI: options.minimumRSSI),
                                           token: token, scripts: ["heart-rate.js"]))
        }
        let prefix = "/api/heart-rate-events/"
        if request.path.hasPrefix(prefix), let address = UIPeripheralApp.address(String(request.path.dropFirst(prefix.count))) {
            // HEAD changes nothing: the stream's head, without starting a monitor flow.
            if request.method == "HEAD" { return .events(AsyncStream { $0.finish() }) }
            return .events(watch(address))
        }
        return nil
    }

    /// Ends every monitor flow and every page's stream; no flow starts after it.
    public func stop() {
        flows.stop()
    }

    /// A page's stream for `address`: what happened so far, then every event; the first page
    /// starts the monitor flow.
    private func watch(_ address: DeviceAddress) -> AsyncStream<[UInt8]> {
        flows.watch(address) { start(address, $0) }
    }

    private func start(_ address: DeviceAddress, _ generation: UInt64) {
        var options = self.options
        options.target = address.address
        options.targetType = address.type.peerType == .public ? .public : .random
        options.count = nil
        let monitor = HeartRateMonitor(central: central, options: options) { [weak self] event in
            self?.publish(address, generation, event)
        }
        let clock = central.clock
        let task = Task(executorPreference: central.clock.taskExecutor) { [weak self] in
            do {
                // A connection another screen makes ends every scan, this flow's too: it scans
                // again after a moment, for as long as a page watches.
                while true {
                    do {
                        try await monitor.run()
                        break
                    } catch HeartRateMonitorError.scanEnded {
                        try await clock.sleep(for: .seconds(1))
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                // A refusal (too weak, not a heart-rate monitor) ends the flow: the pages say
                // why and do not ask again (an event stream would reconnect on its own).
                self?.send(address, generation, key: "status", Self.event("error", [("message", .string("\(error)"))]))
            }
            self?.flows.finish(address, generation)
        }
        flows.attach(task, to: address, generation: generation)
    }

    private func publish(_ address: DeviceAddress, _ generation: UInt64, _ event: HeartRateMonitorEvent) {
        switch event {
        case .scanning:
            send(address, generation, key: "status", Self.event("scanning", []))
        case let .refused(device, minimum):
            send(address, generation, key: "status", Self.event("refused", [("message", .string(HeartRateMonitorError.tooWeak(device, minimumRSSI: minimum).description))]))
        case let .connecting(device):
            send(address, generation, key: "status", Self.event("connecting", [("name", .string(HeartRateMonitorLines.name(of: device))),
                                                                    ("rssi", device.rssi.map { .int(Int($0)) } ?? .null)]))
        case let .connected(_, name, mtu):
            send(address, generation, key: "connected", Self.event("connected", [("name", .optional(name)), ("mtu", .int(mtu))]))
        case let .bodySensorLocation(name):
            send(address, generation, key: "location", Self.event("location", [("name", .string(name))]))
        case .subscribed:
            send(address, generation, key: "status", Self.event("subscribed", []))
        case let .measurement(m, at):
            send(address, generation, key: nil, Self.event("measurement", [("t", .number(Double(at.components.seconds) + Double(at.components.attoseconds) / 1e18))]
                                                     + HeartRateMonitorLines.jsonFields(m)))
        case let .malformed(value, error):
            send(address, generation, key: nil, Self.event("malformed", [("hex", .string(value.hexString)), ("error", .string("\(error)"))]))
        case let .disconnected(_, reason):
            _ = flows.update(address, generation: generation) { $0.state.removeValue(forKey: "connected") }
            send(address, generation, key: "status", Self.event("disconnected", [("reason", .string(reason))]))
        case .device, .tick:
            break
        }
    }

    /// `{"type": …, …}` as one `heart-rate` event.
    static func event(_ type: String, _ fields: [(String, JSON)]) -> [UInt8] {
        ServerSentEvents.event(JSON.object([("type", .string(type))] + fields).text, name: "heart-rate")
    }

    /// Sends `event` to the pages of `address`, and keeps it for pages opened later: under
    /// `key` (the newest of each kind of state), or among the newest measurements.
    private func send(_ address: DeviceAddress, _ generation: UInt64, key: String?, _ event: [UInt8]) {
        flows.send(address, generation, key: key, event)
    }
}
