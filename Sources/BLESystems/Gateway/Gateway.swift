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
    var subscriptions: [GatewaySubscriptionKey: Task<Void, Never>] = [:]
    var runningCommands = 0
    var statistics = GatewayStatistics()
    let started = Date()

    /// Creates the gateway and its MQTT client (nothing is connected until `run`).
    public init(central: Central, configuration: GatewayConfiguration) throws(MQTTError) {
        self.central = central
        self.configuration = configuration
        topics = configuration.topics
        var mqtt = configuration.mqtt
        mqtt.will = MQTTMessage(topic: configuration.topics.status, payload: Array("offline".utf8), qos: 1, retain: true)
        mqtt.maximumInFlight = Int32(configuration.outbox.inFlight)
        let (events, continuation) = AsyncStream<MQTTEvent>.makeStream()
        self.events = events
        client = try MQTTClient(mqtt) { continuation.yield($0) }
        outbox = GatewayOutbox(limits: configuration.outbox)
        throttle = AdvertisementThrottle(settings: configuration.throttle)
    }

    /// Runs until the calling task is cancelled; then publishes `offline` (retained), waits a
    /// moment for the broker to have it, disconnects from the broker, and drops its links.
    public func run() async {
        do {
            try client.subscribe(topics.commands, qos: 1)
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
                outbox.enqueue(.init(topic: topics.status, payload: Array("online".utf8), retain: true, kind: .control))
            case let .disconnected(reason, retryIn):
                configuration.log("\(reason); trying again in \(retryIn)")
            case let .message(m):
                received(m)
            case let .acknowledged(id):
                outbox.acknowledged(id)
            }
            pump()
        }
    }

    /// Hands queued messages to the client while the in-flight bound allows.
    func pump() {
        guard client.isConnected else { return }
        while let m = outbox.next() {
            do {
                let id = try client.publish(MQTTMessage(topic: m.topic, payload: m.payload, qos: 1, retain: m.retain,
                                                        correlationData: m.correlationData))
                outbox.handedOver(m, id: id)
            } catch {
                outbox.giveBack(m)
                return
            }
        }
    }

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
            sinceStatistics += period
            if sinceStatistics >= configuration.statisticsInterval {
                sinceStatistics = .zero
                publish(topics.statistics, statisticsPayload(), kind: .control, retain: true)
            }
            pump()
        }
    }

    private func shutDown() async {
        for (_, task) in subscriptions { task.cancel() }
        subscriptions.removeAll()
        outbox.enqueue(.init(topic: topics.status, payload: Array("offline".utf8), retain: true, kind: .control))
        pump()
        // Bounded: the offline status (and what is queued before it) reaches the broker, or the
        // will says the same a keep-alive later.
        let deadline = Date().addingTimeInterval(2)
        while client.isConnected, outbox.inFlightCount > 0 || !outbox.isEmpty, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            pump()
        }
        client.stop()
        for (_, p) in links { try? await p.disconnect() }
        links.removeAll()
    }
}
