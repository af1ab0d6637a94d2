import BLE
import BLEGateway
import BLEMQTT

/// What a `Gateway` runs with: its topics, the broker connection, the bounds of its queues and
/// the advertisement rate limit (docs/GATEWAY.md).
public struct GatewayConfiguration: Sendable {
    public var topics: GatewayTopics
    /// The broker connection; the gateway sets its will (`status` = `offline`, retained).
    public var mqtt: MQTTConfiguration
    public var outbox = GatewayOutbox.Limits()
    public var throttle = AdvertisementThrottle<BDAddress>.Settings()
    /// How often `status/stats` is published.
    public var statisticsInterval: Duration = .seconds(10)
    /// How long a connection attempt a command made may take.
    public var connectionTimeout: Duration = .seconds(10)
    /// The ATT MTU asked for after connecting.
    public var mtu = 517
    /// Commands carried out at once; one more is answered `busy`.
    public var maximumConcurrentCommands = 8
    /// Commands received and not yet looked at; more are dropped (counted in `status/stats`).
    public var maximumWaitingCommands = 64
    /// How long one command may take in all; then it is answered `timeout` (and cancelled).
    public var commandDeadline: Duration = .seconds(60)
    /// Links kept at once; a command that needs one more is answered `too-many-links`.
    public var maximumLinks = 4
    /// Connection attempts queued at once (they run one at a time); one more is `busy`.
    public var maximumQueuedConnections = 4
    /// A link with no subscription and no command for this long is closed, so a device is not
    /// kept from its other centrals (most peripherals take one at a time).
    public var linkIdleTimeout: Duration = .seconds(60)
    /// Active scanning (scan requests, so scan responses are heard).
    public var activeScan = true
    /// Where the gateway says what it does (connections to the broker, refused commands).
    public var log: @Sendable (String) -> Void = { _ in }

    public init(topics: GatewayTopics, mqtt: MQTTConfiguration) {
        self.topics = topics
        self.mqtt = mqtt
    }
}
