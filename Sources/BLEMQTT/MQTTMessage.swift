/// One application message, sent or received (MQTT 5.0 §3.3).
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// 0 or 1 (this client never uses QoS 2).
    public var qos: Int32
    public var retain: Bool
    /// MQTT 5's Response Topic property (§3.3.2.3.5): where a request's answer should go.
    public var responseTopic: String?
    /// MQTT 5's Correlation Data property (§3.3.2.3.6): returned unchanged with the answer.
    public var correlationData: [UInt8]?

    public init(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }
}

/// What the client reports, from libmosquitto's network thread (`MQTTClient`'s handler).
public enum MQTTEvent: Sendable, Equatable {
    /// A CONNACK with success: the session is up (and the client's subscriptions were sent again).
    case connected
    /// The connection went down, or an attempt failed; the client tries again after `retryIn`.
    case disconnected(reason: String, retryIn: Duration)
    /// A message arrived on a subscription.
    case message(MQTTMessage)
    /// The broker acknowledged the QoS 1 message with this message identifier (PUBACK, §3.4);
    /// a `reasonCode` of 0x80 or more says it refused it (0x87: not authorized to publish there).
    case acknowledged(messageID: Int32, reasonCode: Int32)
}

/// What a client connects with.
public struct MQTTConfiguration: Sendable {
    public var broker: MQTTBrokerURL
    /// The MQTT client identifier (§3.1.3.1); a broker drops an older connection with the same one.
    public var clientID: String
    public var username: String?
    /// Given only from a file by the tools (never a command-line argument).
    public var password: String?
    /// The CA certificate file (PEM) the broker's certificate is checked against, for `mqtts://`;
    /// nil uses the system's trusted certificates (its CA bundle file, e.g.
    /// `/etc/ssl/certs/ca-certificates.crt`).
    public var caFile: String?
    /// Published by the broker when this client goes away without a DISCONNECT (§3.1.2.5).
    public var will: MQTTMessage?
    /// Seconds between PINGREQs when nothing else is sent (§3.1.2.10).
    public var keepAlive: Int32 = 30
    /// QoS 1 messages the broker may hold unacknowledged, told to the broker as Receive Maximum
    /// and kept to by libmosquitto (MOSQ_OPT_SEND_MAXIMUM).
    public var maximumInFlight: Int32 = 32
    /// The first retry's delay; each failure doubles it up to `maximumReconnectDelay`.
    public var reconnectDelay: Duration = .seconds(1)
    public var maximumReconnectDelay: Duration = .seconds(30)
    /// A connection that lasted this long starts the next wait from `reconnectDelay` again; a
    /// shorter one (a broker that refuses or drops us at once, another client taking over our
    /// identifier) keeps doubling it.
    public var stableConnection: Duration = .seconds(10)
    /// The largest packet this client takes, told to the broker in CONNECT (MQTT 5.0
    /// §3.1.2.11.4): it discards larger messages for us rather than send them. nil: no limit.
    public var maximumPacketSize: UInt32?

    public init(broker: MQTTBrokerURL, clientID: String) {
        self.broker = broker
        self.clientID = clientID
    }
}
