import BLE
import BLEGateway
import BLEHTTP
import BLEMQTT
import BLEProfiles
import Foundation
import Synchronization

/// `ble ui --broker URL`: the screens of a building, fed by the `ble gateway`s publishing to one
/// MQTT broker instead of a radio of this process. `/gateways` lists every gateway (online or
/// offline, its statistics) and every device they hear, each gateway's RSSI with the strongest
/// marked; `/heart-rate/ADDRESS` and `/accel/ADDRESS` are the radio mode's screens fed from the
/// gateways' `dev/…` values. Their Subscribe button (`POST /api/broker/command`) publishes a
/// command on the strongest gateway's `cmd` topic with an MQTT 5 response topic of this UI's
/// own, and answers with the gateway's reply.
public final class UIBrokerApp: Sendable {
    /// The overview stream's pace: at most four pictures a second.
    public static let overviewInterval: Duration = .milliseconds(250)
    /// How long a command waits for its gateway's reply (a subscribe may connect first).
    public static let replyTimeout: Duration = .seconds(30)
    /// The largest reply read, in octets.
    static let maximumReply = 16 * 1024
    /// No reply from the gateway in time (RFC 9110 §15.6.5).
    static let gatewayTimeout = HTTPStatus(504, "Gateway Timeout")
    /// The command could not be handed to the broker (RFC 9110 §15.6.3).
    static let badGateway = HTTPStatus(502, "Bad Gateway")
    /// The operations the page may send.
    static let operations: Set<String> = ["subscribe", "unsubscribe"]

    /// The run's token, which the pages carry.
    private let token: String
    /// The gateways' topic prefix.
    private let prefix: String
    /// Paces the overview and times out replies.
    private let clock: any BLEClock
    /// The broker connection.
    private let client: MQTTClient
    /// The state shared with the client's thread.
    private let hub: UIBrokerHub
    /// Sends the overview every `overviewInterval` while it changes.
    private let ticker = Mutex<Task<Void, Never>?>(nil)
    /// Numbers this run's commands.
    private let serial = Mutex<UInt64>(0)

    /// The screens of the gateways under `prefix` on `mqtt`'s broker, their pages carrying
    /// `token`; nothing is connected until `start`. Throws when libmosquitto refuses the
    /// configuration.
    public init(mqtt: MQTTConfiguration, prefix: String, token: String, limits: UIBrokerModel.Limits = UIBrokerModel.Limits(),
                clock: any BLEClock = SystemClock()) throws(MQTTError) {
        self.token = token
        self.prefix = prefix
        self.clock = clock
        let hub = UIBrokerHub(model: UIBrokerModel(prefix: prefix, limits: limits), broker: mqtt.broker.description,
                              replyTopic: Self.replyTopic(prefix: prefix, clientID: mqtt.clientID))
        self.hub = hub
        client = try MQTTClient(mqtt) { event in hub.handle(event, now: Self.unixMilliseconds()) }
    }

    /// A client identifier for one run: `ble-ui-` and 64 random bits.
    public static func makeClientID() -> String {
        var rng = SystemRandomNumberGenerator()
        return "ble-ui-" + String(format: "%016llx", UInt64.random(in: .min ... .max, using: &rng))
    }

    /// Where replies to this UI's commands go: `PREFIX-reply/CLIENT`, under the root the
    /// gateways answer to (`GatewayTopics.replyRoot`); CLIENT keeps only letters, digits and `-`.
    static func replyTopic(prefix: String, clientID: String) -> String {
        let level = String(clientID.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-") })
        return "\(prefix)-reply/\(level.isEmpty ? "ui" : level)"
    }

    /// Subscribes to every gateway's topics and this UI's replies, and starts connecting (and
    /// reconnecting) to the broker and sending the overview to the pages.
    public func start() {
        for filter in GatewayTopics.everyGateway(prefix: prefix) + [hub.replyTopic] {
            // Not connected yet: kept, and sent with every connection.
            try? client.subscribe(filter, qos: 1)
        }
        client.start()
        let clock = self.clock
        let hub = self.hub
        let task = Task(executorPreference: clock.taskExecutor) {
            while !Task.isCancelled {
                do { try await clock.sleep(for: Self.overviewInterval) } catch { return }
                hub.flush()
            }
        }
        ticker.withLock { $0 = task }
    }

    /// Disconnects from the broker and ends every page stream and every wait for a reply.
    public func stop() {
        ticker.withLock { $0?.cancel(); $0 = nil }
        hub.stop()
        client.stop()
    }

    /// The overview as `GET /api/broker` answers it.
    public var overviewJSON: String { hub.overviewJSON() }

    /// Takes one message as if the broker had sent it (what the client's thread does; tests
    /// feed the app this way). `now` is Unix milliseconds.
    public func receive(_ message: MQTTMessage, now: Int) {
        hub.receive(message, now: now)
    }

    // MARK: Routes

    /// Answers the routes of the broker screens; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) async -> UIReply? {
        if request.method == "POST" {
            switch request.path {
            case "/api/broker/command": return await command(request.body)
            case "/api/accel/pause": return pause(request.body)
            default: return nil
            }
        }
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        let path = request.path
        switch path {
        case "/", "/devices", "/heart-rate", "/accel":
            // The radio mode's lists (the screens' back links): the building's list instead.
            return .response(HTTPResponse(.seeOther, headers: [("Location", "/gateways?token=\(token.filter { $0.isHexDigit })")]))
        case "/gateways":
            return .response(page(title: "Gateways", body: UIBrokerAssets.gatewaysBody))
        case "/api/broker":
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "application/json")], body: Array(hub.overviewJSON().utf8)))
        case "/api/broker-events":
            return stream(.overview, head: request.method == "HEAD")
        default:
            break
        }
        if let text = UIAccelApp.suffix(path, after: "/heart-rate/") {
            guard let address = UIPeripheralApp.address(text) else { return badAddress(page: true) }
            return .response(page(title: "Heart rate \(address.address)", scripts: ["heart-rate.js", "broker.js"],
                                  body: UIHeartRateAssets.monitorBody(address, minimumRSSI: -127) + UIBrokerAssets.commandPanel(address, characteristic: "2A37")))
        }
        if let text = UIAccelApp.suffix(path, after: "/accel/") {
            guard let address = UIPeripheralApp.address(text) else { return badAddress(page: true) }
            return .response(page(title: "Accelerometer \(address.address)", scripts: ["accel.js", "broker.js"],
                                  body: UIAccelAssets.sessionBody(address) + UIBrokerAssets.commandPanel(address, characteristic: "0012")))
        }
        if let text = UIAccelApp.suffix(path, after: "/api/heart-rate-events/") {
            guard let address = UIPeripheralApp.address(text) else { return badAddress(page: false) }
            return stream(.heartRate(address.address.description), head: request.method == "HEAD")
        }
        if let text = UIAccelApp.suffix(path, after: "/api/accel-events/") {
            guard let address = UIPeripheralApp.address(text) else { return badAddress(page: false) }
            return stream(.acceleration(address.address.description), head: request.method == "HEAD")
        }
        if let text = UIAccelApp.suffix(path, after: "/api/accel-session/") {
            for (ext, type) in [(".csv", "text/csv; charset=utf-8"), (".svg", "image/svg+xml")] where text.hasSuffix(ext) {
                guard let address = UIPeripheralApp.address(String(text.dropLast(ext.count))) else { return badAddress(page: false) }
                return download(address, ext: ext, type: type)
            }
            return .response(.text(.notFound, "a session downloads as ADDRESS.csv or ADDRESS.svg\n"))
        }
        return UIAssets.asset(path).map { .response($0) }
    }

    /// A broker-mode page: its header links to `/gateways` only.
    private func page(title: String, scripts: [String] = ["broker.js"], body: String) -> HTTPResponse {
        UIAssets.page(title: title, body: body, token: token, scripts: scripts, navigation: UIAssets.brokerNavigation)
    }

    /// A path whose address is none: a page saying so, or the API's JSON error.
    private func badAddress(page isPage: Bool) -> UIReply {
        guard isPage else { return UIAccelApp.badAddress("") }
        var response = page(title: "Not a device", body: UIBrokerAssets.badAddressBody)
        response.status = .notFound
        return .response(response)
    }

    /// A page stream of `kind`, or 503 past the bound.
    private func stream(_ kind: UIBrokerHub.Kind, head: Bool) -> UIReply {
        // HEAD: the head a GET gets, and no stream.
        if head { return .events(AsyncStream { $0.finish() }) }
        guard let stream = hub.listen(kind) else {
            return .response(.text(.serviceUnavailable, "too many pages are open, or ble ui is stopping\n"))
        }
        return .events(stream)
    }

    // MARK: Pause and downloads

    /// `POST /api/accel/pause {"address","paused"}`.
    private func pause(_ body: [UInt8]) -> UIReply {
        let object = UIBrokerPayloads.object(body) ?? [:]
        guard let text = object["address"] as? String, let address = UIPeripheralApp.address(text) else {
            return UIPeripheralApp.json(.object([("error", .string("the body needs \"address\": \"XX:XX:XX:XX:XX:XX/public|random\""))]), status: .badRequest)
        }
        // Missing means pause; anything but a boolean is no guess to make.
        let paused: Bool
        if object["paused"] == nil {
            paused = true
        } else if let given = UIBrokerPayloads.boolean(object["paused"]) {
            paused = given
        } else {
            return UIPeripheralApp.json(.object([("error", .string("\"paused\" must be true or false"))]), status: .badRequest)
        }
        hub.setPaused(address.address.description, paused)
        return UIPeripheralApp.json(.object([("paused", .bool(paused))]))
    }

    /// The samples kept of `address` (the newest `UIBrokerModel.Limits.accelerationHistory`),
    /// as `ble accel`'s CSV or SVG.
    private func download(_ address: DeviceAddress, ext: String, type: String) -> UIReply {
        let samples = hub.state.withLock { $0.model.accelerations(address.address.description) }
        guard !samples.isEmpty else {
            return .response(.text(.notFound, "no accelerometer values of \(address.address) have arrived from the broker\n"))
        }
        var recording = AccelerometerRecording()
        for a in samples {
            recording.record(.sample(AccelerometerSample(x: Float(a.x), y: Float(a.y), z: Float(a.z)), at: .milliseconds(a.time)))
        }
        let text = ext == ".csv" ? recording.csv() : recording.svg()
        let name = "accel-" + address.address.description.filter { $0 != ":" } + ext
        return .response(HTTPResponse(.ok, headers: [("Content-Type", type), ("Content-Disposition", "attachment; filename=\"\(name)\"")],
                                      body: Array(text.utf8)))
    }

    // MARK: Commands

    /// `{"address", "characteristic", "op"}` (op: subscribe, the default, or unsubscribe):
    /// published on the strongest gateway's `cmd` topic with this UI's response topic, and
    /// answered with `{"gateway", "topic", "id", "reply"}` once the gateway replies, or
    /// `{"error"}` (404 when no gateway hears the device, 504 when no reply comes in time).
    private func command(_ body: [UInt8]) async -> UIReply {
        func refuse(_ message: String, _ status: HTTPStatus) -> UIReply {
            UIPeripheralApp.json(.object([("error", .string(message))]), status: status)
        }
        let object = UIBrokerPayloads.object(body) ?? [:]
        guard let text = object["address"] as? String, let address = UIPeripheralApp.address(text) else {
            return refuse("the body needs \"address\": \"XX:XX:XX:XX:XX:XX/public|random\"", .badRequest)
        }
        guard let uuidText = object["characteristic"] as? String, uuidText.count <= 36, let uuid = BluetoothUUID(string: uuidText) else {
            return refuse("the body needs \"characteristic\": a UUID such as 2A37", .badRequest)
        }
        let op = object["op"] as? String ?? "subscribe"
        guard Self.operations.contains(op) else { return refuse("\"op\" is subscribe or unsubscribe", .badRequest) }
        let key = address.address.description
        guard let gateway = hub.state.withLock({ $0.model.strongestGateway(for: key) }) else {
            return refuse("no online gateway reports \(key) with an RSSI", .notFound)
        }
        let id = nextCommandID()
        let topic = "\(prefix)/\(gateway)/cmd"
        let payload = JSON.object([("id", .string(id)), ("op", .string(op)), ("address", .string("\(address)")),
                                   ("characteristic", .string(uuid.description))])
        let message = MQTTMessage(topic: topic, payload: Array(payload.text.utf8), qos: 1, retain: false,
                                  responseTopic: hub.replyTopic, correlationData: Array(id.utf8))
        let sendError = Mutex<String?>(nil)
        let clock = self.clock
        let hub = self.hub
        let timeout = Task(executorPreference: clock.taskExecutor) {
            do { try await clock.sleep(for: Self.replyTimeout) } catch { return }
            hub.expire(id)
        }
        defer { timeout.cancel() }
        let reply = await hub.request(id) {
            do {
                try client.publish(message)
                return true
            } catch {
                sendError.withLock { $0 = "\(error)" }
                return false
            }
        }
        let fields: [(String, JSON)] = [("gateway", .string(gateway)), ("topic", .string(topic)), ("id", .string(id))]
        guard let reply else {
            let reason = sendError.withLock { $0 } ?? "no reply from \(gateway) within \(Self.replyTimeout)"
            return UIPeripheralApp.json(.object(fields + [("error", .string(reason))]), status: sendError.withLock { $0 } == nil ? Self.gatewayTimeout : Self.badGateway)
        }
        // The gateway's reply as it came when it is a JSON object, else as text.
        let replied: JSON = UIBrokerPayloads.object(reply).map { UIBrokerPayloads.json($0) } ?? .string(String(decoding: reply, as: UTF8.self))
        return UIPeripheralApp.json(.object(fields + [("reply", replied)]))
    }

    /// `ui-N-RANDOM`: this run's command `N`, with 32 random bits so runs do not collide.
    private func nextCommandID() -> String {
        let n = serial.withLock { n -> UInt64 in n += 1; return n }
        var rng = SystemRandomNumberGenerator()
        return "ui-\(n)-" + String(format: "%08x", UInt32.random(in: .min ... .max, using: &rng))
    }

    /// The wall clock as Unix milliseconds (the stamp of values that carry none).
    static func unixMilliseconds() -> Int {
        Int((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
