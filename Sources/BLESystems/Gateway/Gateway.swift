import BLE
import BLEGateway
import BLEMQTT
import Foundation

/// `ble gateway`: a central on one controller that publishes what it hears and what its
/// subscriptions receive to an MQTT broker, and carries out the commands it is sent
/// (docs/GATEWAY.md). One actor owns the gateway's state (heard devices, links,
/// subscriptions, the outbound queue); the MQTT client's thread only hands events in.
public actor Gateway {
    let central: Central
    let configuration: GatewayConfiguration
    let topics: GatewayTopics
    let client: MQTTClient
    let events: AsyncStream<MQTTEvent>
    var outbox: GatewayOutbox
    var throttle: AdvertisementThrottle<BDAddress>
    /// The last report of every device the throttle tracks.
    var heard: [BDAddress: ScannedDevice] = [:]
    var links: [BDAddress: Peripheral] = [:]
    var connecting: [BDAddress: Task<Peripheral, any Error>] = [:]
    /// One connection attempt at a time (`connectionTurn`), the others waiting in order.
    var connectionAttemptUnderWay = false
    var connectionWaiters: [CheckedContinuation<Void, Never>] = []
    var subscriptions: [GatewaySubscriptionKey: GatewaySubscription] = [:]
    /// Subscriptions being set up (the key is taken before the first await, so a second
    /// command for the same one answers `already` instead of making an orphan).
    var subscribing: Set<GatewaySubscriptionKey> = []
    var nextSubscriptionID = 0
    /// When each kept link last finished serving a command (on the central's clock), for
    /// `linkIdleTimeout`; only links in `links` have an entry.
    var linkLastUsed: [BDAddress: Duration] = [:]
    /// Commands under way per device: their links are not idle.
    var linkUsers: [BDAddress: Int] = [:]
    /// Subscriptions being taken down (a subscribe of one meanwhile is `busy`).
    var unsubscribing: Set<GatewaySubscriptionKey> = []
    var runningCommands = 0
    var statistics = GatewayStatistics()
    /// Commands waiting between the MQTT thread and this actor, bounded (`GatewayIntake`).
    let intake: GatewayIntake
    var logLimiter = GatewayLogLimiter()
    let started = Date()

    /// Creates the gateway and its MQTT client (nothing is connected until `run`).
    public init(central: Central, configuration: GatewayConfiguration) throws(MQTTError) {
        self.central = central
        self.configuration = configuration
        topics = configuration.topics
        var mqtt = configuration.mqtt
        mqtt.will = MQTTMessage(topic: configuration.topics.status, payload: Array("offline".utf8), qos: 1, retain: true)
        mqtt.maximumInFlight = Int32(configuration.outbox.inFlight)
        // A command is at most 16 KiB (larger ones are refused by size); up to this the
        // gateway still answers `too-large`, beyond it the broker discards them for us.
        mqtt.maximumPacketSize = Self.maximumPacketSize
        let (events, continuation) = AsyncStream<MQTTEvent>.makeStream()
        self.events = events
        let intake = GatewayIntake(limit: configuration.maximumWaitingCommands)
        self.intake = intake
        client = try MQTTClient(mqtt) { event in
            // On the MQTT thread: commands beyond the bound are dropped here, counted.
            if case .message = event, !intake.admit() { return }
            continuation.yield(event)
        }
        outbox = GatewayOutbox(limits: configuration.outbox)
        throttle = AdvertisementThrottle(settings: configuration.throttle)
    }

    /// Shutting down waits here for the outbox to drain (`consumeEvents` resumes it).
    var drained: CheckedContinuation<Void, Never>?
    /// How long shutting down waits for the broker to acknowledge what is queued.
    static let shutdownBound: Duration = .seconds(2)

    /// The largest MQTT packet the gateway takes (told to the broker in CONNECT).
    public static let maximumPacketSize: UInt32 = 16 << 20

    /// Runs until the calling task is cancelled; then publishes `offline` (retained), waits a
    /// moment for the broker to have it, disconnects from the broker, and drops its links.
    public func run() async {
        do {
            // Retained commands are never sent at subscription, and one arriving live keeps its
            // RETAIN flag, so it is refused (`received`).
            try client.subscribe(topics.commands, qos: 1, options: [.retainAsPublished, .sendRetainedNever])
        } catch {
            configuration.log("cannot subscribe to \(topics.commands): \(error)")
        }
        client.start()
        // Not a child of the group below: acknowledgements must still be taken while shutting down.
        let consumer = Task { await self.consumeEvents() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.scan() }
            group.addTask { await self.tick() }
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(3600))
            }
            group.cancelAll()
        }
        // In a task of its own, which the caller's cancellation does not reach: its waits are real.
        await Task { await self.shutDown() }.value
        consumer.cancel()
    }

    /// What the gateway has counted, as `status/stats` publishes it.
    public var statisticsJSON: JSON { statisticsPayload() }

    // MARK: MQTT events

    private func consumeEvents() async {
        for await event in events {
            if Task.isCancelled { return }
            switch event {
            case .connected:
                statistics.connections += 1
                configuration.log("connected to \(configuration.mqtt.broker) as \(topics.base)")
                outbox.enqueueFirst(.init(topic: topics.status, payload: Array("online".utf8), retain: true, kind: .control))
            case let .disconnected(reason, retryIn):
                configuration.log("\(reason); trying again in \(retryIn)")
            case let .message(m):
                intake.taken()
                received(m)
            case let .acknowledged(id, reasonCode):
                outbox.acknowledged(id)
                if reasonCode >= 0x80 {
                    statistics.brokerRefused += 1
                    limitedLog("the broker refused a message (reason 0x\(String(reasonCode, radix: 16))): is this gateway allowed to publish there?")
                }
            }
            pump()
            if let waiter = drained, outbox.isEmpty && outbox.inFlightCount == 0 || !client.isConnected {
                drained = nil
                waiter.resume()
            }
        }
    }

    /// Hands queued messages to the client while the in-flight bound allows. A message the
    /// client refuses for want of a connection goes back to wait for the next one (at least
    /// once: libmosquitto may also have kept it); one refused for any other reason (too big for
    /// the broker, say) is dropped and counted, so it cannot block its queue.
    func pump() {
        guard client.isConnected else { return }
        while let m = outbox.next() {
            do {
                let id = try client.publish(MQTTMessage(topic: m.topic, payload: m.payload, qos: 1, retain: m.retain,
                                                        correlationData: m.correlationData))
                outbox.handedOver(m, id: id)
            } catch .notConnected {
                outbox.giveBack(m)
                return
            } catch {
                statistics.publishFailed += 1
                limitedLog("dropped a message to \(m.topic): \(error)")
            }
        }
    }

    /// Logs `line` unless too many lines came lately (a flood of bad commands must not flood
    /// the log); what was held back is counted in the next line let through.
    func limitedLog(_ line: String) {
        let (allowed, suppressed) = logLimiter.allow(now: central.clock.now())
        guard allowed else { return }
        configuration.log(suppressed > 0 ? "\(line) (and \(suppressed) lines held back)" : line)
    }

    /// Queues `json` for `topic` and pumps.
    func publish(_ topic: String, _ json: JSON, kind: GatewayOutbox.Kind, retain: Bool = false, correlationData: [UInt8]? = nil) {
        outbox.enqueue(.init(topic: topic, payload: Array(json.text.utf8), retain: retain, kind: kind, correlationData: correlationData))
        pump()
    }

    // MARK: Periodic work

    private func tick() async {
        let clock = central.clock
        var sinceStatistics: Duration = .zero
        let period: Duration = .milliseconds(250)
        while !Task.isCancelled {
            do { try await clock.sleep(for: period) } catch { return }
            let now = clock.now()
            for key in throttle.due(now: now) {
                if let d = heard[key] { publishAdvertisement(d) }
            }
            for key in throttle.expired(now: now) { forget(key) }
            closeIdleLinks(now: now)
            sinceStatistics += period
            if sinceStatistics >= configuration.statisticsInterval {
                sinceStatistics = .zero
                publish(topics.statistics, statisticsPayload(), kind: .control, retain: true)
            }
            pump()
        }
    }

    private func shutDown() async {
        for (_, subscription) in subscriptions { subscription.task.cancel() }
        subscriptions.removeAll()
        outbox.enqueue(.init(topic: topics.status, payload: Array("offline".utf8), retain: true, kind: .control))
        pump()
        // Until the offline status (and what is queued before it) is acknowledged, the
        // connection goes, or 2 s pass (the will then says the same a keep-alive later): woken by
        // the events, bounded by a timer.
        if client.isConnected, outbox.inFlightCount > 0 || !outbox.isEmpty {
            await withCheckedContinuation { continuation in
                drained = continuation
                Task {
                    try? await Task.sleep(for: Self.shutdownBound)
                    self.drained?.resume()
                    self.drained = nil
                }
            }
        }
        client.stop()
        for (_, p) in links { try? await p.disconnect() }
        links.removeAll()
    }
}
