/// What a gateway has to publish and has not yet handed to the MQTT client, and the bounds that
/// keep it from growing when the broker is slow or gone (docs/GATEWAY.md#delivery). Sans-IO:
/// the gateway puts messages in, takes the next one when the client may have it, and tells the
/// outbox which were acknowledged.
///
/// - Control messages (`status`, `status/stats`) come first; bounded by `Limits.control`, the
///   oldest dropped past it; `online` goes to the front (`enqueueFirst`).
/// - Replies to commands and notifications take turns, so a flood of commands (each answered)
///   cannot starve the values; replies are bounded by `Limits.replies`, the oldest dropped.
/// - Notifications keep their order, up to `Limits.notifications`; one arriving to a full queue
///   is dropped and counted (the queued ones were promised first).
/// - Advertisements are one per topic (a newer one for a device replaces the queued one, counted
///   as superseded), up to `Limits.advertisements` devices, the oldest dropped past it.
/// - Every eighth message handed out is an advertisement when one waits, so a backlog of
///   values does not freeze the advertisements.
/// - At most `Limits.inFlight` QoS 1 messages are with the client and unacknowledged at once.
public struct GatewayOutbox: Sendable {
    public struct Limits: Sendable, Equatable {
        public var inFlight = 32
        public var notifications = 1000
        public var advertisements = 500
        public var control = 64
        public var replies = 256
        public init() {}
    }

    public enum Kind: Sendable, Equatable {
        case control, reply, notification, advertisement
    }

    /// A message to publish, as the outbox keeps it.
    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var retain: Bool
        public var kind: Kind
        public var correlationData: [UInt8]?

        public init(topic: String, payload: [UInt8], retain: Bool = false, kind: Kind, correlationData: [UInt8]? = nil) {
            self.topic = topic
            self.payload = payload
            self.retain = retain
            self.kind = kind
            self.correlationData = correlationData
        }
    }

    /// What has happened to messages so far, for `status/stats`.
    public struct Counts: Sendable, Equatable {
        public var published = 0
        public var acknowledged = 0
        public var notificationsDropped = 0
        public var advertisementsDropped = 0
        public var advertisementsSuperseded = 0
        public var controlDropped = 0
        public var repliesDropped = 0
        public init() {}
    }

    public let limits: Limits
    public private(set) var counts = Counts()
    private var control: [Message] = []
    private var replies: [Message] = []
    /// Whose turn it is between replies and notifications.
    private var replyTurn = true
    /// Messages handed out since an advertisement last was: every `advertisementShare`-th
    /// goes to a waiting advertisement, so a backlog of values does not freeze the room's state.
    private var sinceAdvertisement = 0
    static let advertisementShare = 8
    private var notifications: [Message] = []
    private var notificationsHead = 0
    private var advertisementOrder: [String] = []
    private var advertisementsHead = 0
    private var advertisements: [String: Message] = [:]
    private var inFlight: Set<Int32> = []

    public init(limits: Limits = Limits()) { self.limits = limits }

    public var queuedNotifications: Int { notifications.count - notificationsHead }
    public var queuedAdvertisements: Int { advertisements.count }
    public var queuedControl: Int { control.count }
    public var queuedReplies: Int { replies.count }
    public var inFlightCount: Int { inFlight.count }
    public var isEmpty: Bool { control.isEmpty && replies.isEmpty && queuedNotifications == 0 && advertisements.isEmpty }

    public mutating func enqueue(_ m: Message) {
        switch m.kind {
        case .control:
            if control.count >= limits.control {
                control.removeFirst()
                counts.controlDropped += 1
            }
            control.append(m)
        case .reply:
            if replies.count >= limits.replies {
                replies.removeFirst()
                counts.repliesDropped += 1
            }
            replies.append(m)
        case .notification:
            guard queuedNotifications < limits.notifications else {
                counts.notificationsDropped += 1
                return
            }
            notifications.append(m)
        case .advertisement:
            if advertisements[m.topic] != nil {
                advertisements[m.topic] = m
                counts.advertisementsSuperseded += 1
                return
            }
            if advertisements.count >= limits.advertisements, let oldest = popOldestAdvertisement() {
                _ = oldest
                counts.advertisementsDropped += 1
            }
            advertisements[m.topic] = m
            advertisementOrder.append(m.topic)
        }
    }

    /// A control message ahead of every other queued one (`online` after a reconnection, so
    /// watchers do not wait behind a backlog to learn the gateway is back).
    public mutating func enqueueFirst(_ m: Message) {
        if control.count >= limits.control {
            control.removeLast()
            counts.controlDropped += 1
        }
        control.insert(m, at: 0)
    }

    /// The next message to hand to the client, if the in-flight bound allows one; it is taken
    /// out of the queue (give it back with `giveBack` if the client refused it).
    public mutating func next() -> Message? {
        guard inFlight.count < limits.inFlight else { return nil }
        if !control.isEmpty { return control.removeFirst() }
        sinceAdvertisement += 1
        if sinceAdvertisement >= Self.advertisementShare, let m = popOldestAdvertisement() {
            sinceAdvertisement = 0
            return m
        }
        let notificationWaits = notificationsHead < notifications.count
        if !replies.isEmpty, replyTurn || !notificationWaits {
            replyTurn = false
            return replies.removeFirst()
        }
        replyTurn = true
        if notificationWaits {
            let m = notifications[notificationsHead]
            notificationsHead += 1
            if notificationsHead > 256, notificationsHead * 2 > notifications.count {
                notifications.removeFirst(notificationsHead)
                notificationsHead = 0
            }
            return m
        }
        sinceAdvertisement = 0
        return popOldestAdvertisement()
    }

    /// `m` was handed over as message `id`: it counts against the bound until acknowledged.
    public mutating func handedOver(_ m: Message, id: Int32) {
        inFlight.insert(id)
        counts.published += 1
    }

    /// The client refused `m` (no connection): it goes back to the front of its queue, and the
    /// queue's bound holds (by each queue's own rule of what is dropped).
    public mutating func giveBack(_ m: Message) {
        switch m.kind {
        case .control:
            // The oldest is dropped past the bound: here that is `m` itself.
            guard control.count < limits.control else {
                counts.controlDropped += 1
                return
            }
            control.insert(m, at: 0)
        case .reply:
            guard replies.count < limits.replies else {
                counts.repliesDropped += 1
                return
            }
            replies.insert(m, at: 0)
        case .notification:
            if notificationsHead > 0 {
                notificationsHead -= 1
                notifications[notificationsHead] = m
            } else {
                notifications.insert(m, at: 0)
            }
            // The queued ones were promised first: past the bound the newest goes.
            if queuedNotifications > limits.notifications {
                notifications.removeLast()
                counts.notificationsDropped += 1
            }
        case .advertisement:
            guard advertisements[m.topic] == nil else { return }
            guard advertisements.count < limits.advertisements else {
                counts.advertisementsDropped += 1
                return
            }
            advertisements[m.topic] = m
            advertisementOrder.insert(m.topic, at: advertisementsHead)
        }
    }

    /// The broker acknowledged message `id` (PUBACK).
    public mutating func acknowledged(_ id: Int32) {
        if inFlight.remove(id) != nil { counts.acknowledged += 1 }
    }

    private mutating func popOldestAdvertisement() -> Message? {
        while advertisementsHead < advertisementOrder.count {
            let topic = advertisementOrder[advertisementsHead]
            advertisementsHead += 1
            if advertisementsHead > 256, advertisementsHead * 2 > advertisementOrder.count {
                advertisementOrder.removeFirst(advertisementsHead)
                advertisementsHead = 0
            }
            if let m = advertisements.removeValue(forKey: topic) { return m }
        }
        return nil
    }
}
