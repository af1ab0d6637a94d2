import CMosquitto
import Foundation
import Synchronization

/// An MQTT 5 client over Eclipse Mosquitto's libmosquitto: it connects, keeps the connection
/// (reconnecting after a failure with a doubling delay, and subscribing again), publishes, and
/// reports what happens to `handler`.
///
/// Threads: libmosquitto runs on one thread this client owns (`MQTTNetworkLoop`), in its
/// threaded mode (`mosquitto_threaded_set`), which makes `publish` and `subscribe` safe from any
/// thread: they queue a packet and wake the loop. `handler` is called on the loop's thread, one
/// event at a time, and must not block (hand the event on, e.g. to an actor or a stream).
/// Call `stop` when done: the loop holds the client until then.
public final class MQTTClient: Sendable {
    public let configuration: MQTTConfiguration
    let handle: MosquittoHandle
    let handler: @Sendable (MQTTEvent) -> Void
    let state = Mutex(ClientState())
    let loop: MQTTNetworkLoop

    struct ClientState {
        var connected = false
        var subscriptions: [(filter: String, qos: Int32, options: Int32)] = []
        /// Why the last CONNACK refused us, told with the disconnection that follows it.
        var refusal: String?
    }

    /// Creates the client; nothing is sent until `start`. Throws when libmosquitto refuses the
    /// configuration (an unreadable CA file, an invalid client identifier).
    public init(_ configuration: MQTTConfiguration, handler: @escaping @Sendable (MQTTEvent) -> Void) throws(MQTTError) {
        MosquittoLibrary.initialise()
        self.configuration = configuration
        self.handler = handler
        handle = try MosquittoHandle(configuration)
        loop = MQTTNetworkLoop()
        mosquitto_user_data_set(handle.pointer, Unmanaged.passUnretained(self).toOpaque())
        MosquittoCallbacks.install(on: handle.pointer)
    }

    /// Whether a session is up now (between a successful CONNACK and the connection's loss).
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// Starts connecting on the network thread; failures are reported and retried, not thrown.
    public func start() {
        loop.start(self)
    }

    /// Sends `message` (QoS 0 or 1); returns its message identifier, which an `.acknowledged`
    /// event names when the broker has it (QoS 1). While there is no connection libmosquitto
    /// keeps QoS 1 messages and sends them after reconnecting (this returns their identifier
    /// then too), so callers bound what they hand over; QoS 0 then throws `.notConnected`.
    @discardableResult
    public func publish(_ message: MQTTMessage) throws(MQTTError) -> Int32 {
        guard !loop.isStopping else { throw .stopped }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if let topic = message.responseTopic {
            try check(mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), topic), "setting the response topic")
        }
        if let data = message.correlationData {
            guard data.count <= Int(UInt16.max) else { throw .configuration("correlation data longer than 65535 octets") }
            let rc = data.withUnsafeBytes { mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), $0.baseAddress, UInt16(data.count)) }
            try check(rc, "setting the correlation data")
        }
        guard message.payload.count <= Int(Int32.max) else { throw .configuration("payload too long") }
        var messageID: Int32 = 0
        let rc = message.payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(handle.pointer, &messageID, message.topic, Int32(bytes.count), bytes.baseAddress,
                                 message.qos, message.retain, properties)
        }
        // Without a connection libmosquitto 2.0 still queues a QoS 1 message (it has its id)
        // and sends it after reconnecting: handed over, not refused, or it would go twice.
        if rc == Int32(MOSQ_ERR_NO_CONN.rawValue), message.qos > 0, messageID != 0 { return messageID }
        try check(rc, "publishing to \(message.topic)")
        return messageID
    }

    /// Subscription options (MQTT 5.0 §3.8.3.1).
    public struct SubscriptionOptions: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Messages keep the RETAIN flag they were published with, also when delivered live.
        public static let retainAsPublished = SubscriptionOptions(rawValue: Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue))
        /// The broker sends no retained messages when the subscription is made.
        public static let sendRetainedNever = SubscriptionOptions(rawValue: Int32(MQTT_SUB_OPT_SEND_RETAIN_NEVER.rawValue))
    }

    /// Subscribes to `filter` now if connected, and after every reconnection.
    public func subscribe(_ filter: String, qos: Int32 = 1, options: SubscriptionOptions = []) throws(MQTTError) {
        let connected = state.withLock { s in
            s.subscriptions.removeAll { $0.filter == filter }
            s.subscriptions.append((filter, qos, options.rawValue))
            return s.connected
        }
        guard connected else { return }
        let rc = mosquitto_subscribe_v5(handle.pointer, nil, filter, qos, options.rawValue, nil)
        // Lost meanwhile: sent again on the next CONNACK.
        if rc == Int32(MOSQ_ERR_NO_CONN.rawValue) { return }
        try check(rc, "subscribing to \(filter)")
    }

    /// Sends DISCONNECT (so the broker does not publish the will), and ends the network thread,
    /// waiting for it at most `timeout`.
    public func stop(timeout: Duration = .seconds(2)) {
        loop.stop(self, timeout: timeout)
    }

    func check(_ rc: Int32, _ operation: String) throws(MQTTError) {
        guard rc != Int32(MOSQ_ERR_SUCCESS.rawValue) else { return }
        if rc == Int32(MOSQ_ERR_NO_CONN.rawValue) { throw .notConnected }
        throw .library(operation: operation, code: rc, message: MosquittoLibrary.text(rc))
    }

    // The callbacks' ends (MosquittoCallbacks), on the network thread.

    func didConnect(reasonCode: Int32) {
        guard reasonCode == 0 else {
            let text = String(cString: mosquitto_reason_string(reasonCode))
            state.withLock { $0.refusal = "the broker refused the connection: \(text)" }
            return
        }
        let subscriptions = state.withLock { s in
            s.connected = true
            s.refusal = nil
            return s.subscriptions
        }
        for s in subscriptions { _ = mosquitto_subscribe_v5(handle.pointer, nil, s.filter, s.qos, s.options, nil) }
        loop.connectionStarted()
        handler(.connected)
    }

    /// The connection is gone (or an attempt failed): `reason`, unless a refusal says more.
    func didLoseConnection(_ reason: String, retryIn: Duration) {
        let refusal = state.withLock { s in
            s.connected = false
            defer { s.refusal = nil }
            return s.refusal
        }
        handler(.disconnected(reason: refusal ?? reason, retryIn: retryIn))
    }

    func didReceive(_ message: MQTTMessage) { handler(.message(message)) }

    func didPublish(messageID: Int32, reasonCode: Int32) { handler(.acknowledged(messageID: messageID, reasonCode: reasonCode)) }

    /// A DISCONNECT from the broker (or our own): a reason worth more than "connection lost".
    func didDisconnect(reasonCode: Int32) {
        let text: String?
        switch reasonCode {
        case Int32(MQTT_RC_SESSION_TAKEN_OVER.rawValue):
            text = "another client connected with this client identifier '\(configuration.clientID)' and took the session over"
        case 0x80...0xFF:
            text = "the broker disconnected us: \(String(cString: mosquitto_reason_string(reasonCode)))"
        default:
            text = nil
        }
        guard let text else { return }
        state.withLock { if $0.refusal == nil { $0.refusal = text } }
    }
}

/// libmosquitto's `struct mosquitto *`, created and configured from an `MQTTConfiguration`.
/// Sendable because libmosquitto in threaded mode locks its own state for the calls made from
/// other threads (publish, subscribe, disconnect); it is destroyed only after the network
/// thread has ended.
final class MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ c: MQTTConfiguration) throws(MQTTError) {
        guard let p = mosquitto_new(c.clientID, true, nil) else {
            throw .configuration("libmosquitto could not create a client for the identifier '\(c.clientID)' (errno \(errno))")
        }
        pointer = p
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            guard rc != 0 else { return }
            throw .configuration("\(what): \(MosquittoLibrary.text(rc))")
        }
        try check(mosquitto_int_option(p, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), "MQTT 5")
        try check(mosquitto_int_option(p, MOSQ_OPT_SEND_MAXIMUM, max(1, min(c.maximumInFlight, 65535))), "the in-flight bound")
        try check(mosquitto_int_option(p, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        try check(mosquitto_threaded_set(p, true), "threaded mode")
        if c.username != nil || c.password != nil {
            try check(mosquitto_username_pw_set(p, c.username, c.password), "the user name")
        }
        if c.broker.usesTLS {
            if let ca = c.caFile {
                guard FileManager.default.isReadableFile(atPath: ca) else { throw .configuration("the CA file '\(ca)' cannot be read") }
                try check(mosquitto_tls_set(p, ca, nil, nil, nil, nil), "the CA file '\(ca)'")
            } else if let bundle = Self.systemCertificateBundles.first(where: { FileManager.default.isReadableFile(atPath: $0) }) {
                // The system's CAs as a file rather than MOSQ_OPT_TLS_USE_OS_CERTS: with that
                // option alone libmosquitto 2.0.11 refuses every connection after the first
                // ("invalid arguments": it finds its own TLS context from the first and neither
                // a CA file nor a CA directory), so a gateway could never reconnect.
                try check(mosquitto_tls_set(p, bundle, nil, nil, nil, nil), "the system's CA certificates in \(bundle)")
            } else {
                // No bundle where distributions put one: libmosquitto's own option, which
                // connects once (see above).
                try check(mosquitto_int_option(p, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "the system's CA certificates")
            }
        }
        if let will = c.will {
            let rc = will.payload.withUnsafeBytes { mosquitto_will_set_v5(p, will.topic, Int32($0.count), $0.baseAddress, will.qos, will.retain, nil) }
            try check(rc, "the will on \(will.topic)")
        }
    }

    deinit { mosquitto_destroy(pointer) }

    /// Where distributions keep their trusted CAs as one PEM file: Debian and Ubuntu, Fedora and
    /// RHEL, openSUSE, Alpine.
    static let systemCertificateBundles = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem",
    ]
}

/// `mosquitto_lib_init`, once per process, and libmosquitto's error texts.
enum MosquittoLibrary {
    private static let initialised: Bool = {
        mosquitto_lib_init()
        return true
    }()

    static func initialise() { _ = initialised }

    static func text(_ rc: Int32) -> String {
        if rc == Int32(MOSQ_ERR_ERRNO.rawValue) { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(rc))
    }
}
