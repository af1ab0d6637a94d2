import BLE
import BLEGateway
import BLEMQTT
import BLESystems
import Foundation
import Synchronization

/// The two passes of `ble-bench gateway`, each over fresh worlds built the same way:
///
/// - radio only: on each radio a plain `Central` does the Bluetooth work a gateway does (an
///   active scan with duplicates, connections to the notifiers and their subscriptions) and
///   drops what it gets; no MQTT. Its CPU time is what the radios and their hosts cost.
/// - gateways: on each radio a `Gateway` publishing to the broker, subscribed to its notifiers
///   through its command topic, and one subscriber counting what arrives.
///
/// Each pass warms up for `warmUp` seconds once the traffic runs, then measures for the run's
/// seconds, then stops the traffic and waits `drain` seconds for values still on their way.
struct GatewayBenchPasses {
    let options: GatewayBenchOptions
    let broker: MQTTBrokerURL
    /// The gateways' topic prefix: one level per run, so runs against a shared broker do not meet.
    let prefix = "blebench/\(getpid())"
    let warmUp = 1.0
    let drain = 1.0

    var names: [String] { (1...options.gateways).map { "gw\($0)" } }

    /// What a pass measured over its window.
    struct Window: Sendable {
        var cpu = 0.0
        var wall = 0.0
        var brokerCPU: Double?
    }

    struct RadioOnly: Sendable {
        var window = Window()
        var reports: [Int] = []
        var values: [Int] = []
        var latencies: [[Double]] = []
        var sent: [Int] = []
        var worlds: [GatewayBenchWorld.Counts] = []
    }

    struct Gateways: Sendable {
        var window = Window()
        var setupSeconds = 0.0
        /// Messages that arrived before the window (the first advertisement of every device).
        var beforeWindow: [BenchSubscriber.Counts] = []
        var counts: [BenchSubscriber.Counts] = []
        var statistics: [(start: GatewayStatisticsSnapshot, end: GatewayStatisticsSnapshot)] = []
        var latencies: [[Double]] = []
        var sent: [Int] = []
        var duplicates = 0
        var worlds: [GatewayBenchWorld.Counts] = []
    }

    // MARK: Radio only

    func radioOnly(brokerCPU: @Sendable () -> Double?) async throws -> RadioOnly {
        let ledger = NotificationLedger(gateways: options.gateways, notifiersPerGateway: options.notifiers)
        let worlds = try await buildWorlds()
        let tally = RadioOnlyTally(radios: worlds.count)
        var centrals: [Central] = []
        var listeners: [Task<Void, Never>] = []
        do {
            for w in worlds {
                let central = try await w.addCentral()
                centrals.append(central)
                for n in w.notifiers {
                    let values = try await Self.subscribe(central, to: n)
                    let number = w.number
                    listeners.append(Task {
                        for await v in values {
                            ledger.arrived(v, at: monotonicSeconds())
                            tally.count(value: number)
                        }
                    })
                }
                let number = w.number
                listeners.append(Task {
                    do {
                        for try await _ in central.scan(filter: ScanFilter(allowDuplicates: true), active: true) {
                            tally.count(report: number)
                        }
                    } catch {}
                })
            }
            var result = RadioOnly()
            result.window = try await measure(worlds, ledger: ledger, brokerCPU: brokerCPU,
                                              start: { tally.counting(true) },
                                              end: { tally.counting(false) })
            (result.reports, result.values) = tally.counts
            (result.latencies, result.sent, _) = ledger.results()
            result.worlds = worlds.map(\.counts)
            listeners.forEach { $0.cancel() }
            for c in centrals { await c.close() }
            for w in worlds { await w.close() }
            return result
        } catch {
            listeners.forEach { $0.cancel() }
            for c in centrals { await c.close() }
            for w in worlds { await w.close() }
            throw error
        }
    }

    /// Connects `central` to notifier `n` and subscribes to its characteristic.
    private static func subscribe(_ central: Central, to n: GatewayBenchWorld.Notifier) async throws -> NotificationStream {
        let p = try await central.connect(DeviceAddress(n.address, type: .public), timeout: .seconds(10))
        _ = try? await p.exchangeMTU(517)
        guard let s = try await p.discoverServices([GatewayBenchWorld.service]).first,
              let c = try await p.discoverCharacteristics([GatewayBenchWorld.characteristic], for: s).first else {
            throw GatewayBenchError.failed("notifier \(n.address) has no benchmark characteristic")
        }
        let values = await p.notifications(for: c)
        try await p.setNotifyValue(true, for: c)
        return values
    }

    // MARK: Gateways

    func gateways(brokerCPU: @Sendable () -> Double?) async throws -> Gateways {
        let ledger = NotificationLedger(gateways: options.gateways, notifiersPerGateway: options.notifiers)
        let setupStarted = monotonicSeconds()
        let subscriber = try BenchSubscriber(broker: broker, prefix: prefix, names: names, ledger: ledger)
        var worlds: [GatewayBenchWorld] = []
        var gateways: [Gateway] = []
        var running: [Task<Void, Never>] = []
        var centrals: [Central] = []
        func tearDown() async {
            running.forEach { $0.cancel() }
            for r in running { await r.value }
            for c in centrals { await c.close() }
            for w in worlds { await w.close() }
            if options.broker != nil { clearRetained(subscriber) }
            subscriber.stop()
        }
        do {
            try await subscriber.start()
            subscriber.startCounting()
            worlds = try await buildWorlds()
            for (w, name) in zip(worlds, names) {
                let central = try await w.addCentral()
                centrals.append(central)
                var configuration = GatewayConfiguration(topics: try GatewayTopics(prefix: prefix, name: name),
                                                         mqtt: MQTTConfiguration(broker: broker, clientID: "ble-bench-\(name)-\(getpid())"))
                // One link per notifier, kept for the run (a user would raise --max-links so).
                configuration.maximumLinks = max(configuration.maximumLinks, options.notifiers)
                configuration.maximumQueuedConnections = max(configuration.maximumQueuedConnections, options.notifiers)
                configuration.log = { line in
                    // Each link the bench asked for is logged as it is made: not worth a line each.
                    if line.hasPrefix("connected to ") { return }
                    FileHandle.standardError.write(Data("ble-bench: \(name): \(line)\n".utf8))
                }
                let gateway = try Gateway(central: central, configuration: configuration)
                gateways.append(gateway)
                running.append(Task { await gateway.run() })
            }
            // As a user would: a subscribe command on each gateway's command topic, answered on its
            // reply topic; the gateways in parallel, each one's notifiers one after the other.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (w, name) in zip(worlds, names) {
                    group.addTask { try await self.subscribeNotifiers(of: w, through: name, subscriber) }
                }
                try await group.waitForAll()
            }
            var result = Gateways()
            result.setupSeconds = monotonicSeconds() - setupStarted
            var starts: [GatewayStatisticsSnapshot] = []
            var ends: [GatewayStatisticsSnapshot] = []
            let gatewaysNow = gateways
            result.window = try await measure(worlds, ledger: ledger, brokerCPU: brokerCPU, start: {
                result.beforeWindow = subscriber.stopCounting()
                subscriber.startCounting()
            }, snapshot: {
                var s: [GatewayStatisticsSnapshot] = []
                for g in gatewaysNow { s.append(GatewayStatisticsSnapshot(await g.statisticsJSON)) }
                return s
            }, started: { starts = $0 }, end: {
                result.counts = subscriber.stopCounting()
            }, ended: { ends = $0 })
            result.statistics = Array(zip(starts, ends))
            (result.latencies, result.sent, result.duplicates) = ledger.results()
            result.worlds = worlds.map(\.counts)
            await tearDown()
            return result
        } catch {
            await tearDown()
            throw error
        }
    }

    /// Once gateway `name` is online, sends `{"op":"subscribe"}` for each of `w`'s notifiers, once
    /// the gateway has published its advertisement, and waits for a successful reply; a failure
    /// is tried again a moment later.
    private func subscribeNotifiers(of w: GatewayBenchWorld, through name: String, _ subscriber: BenchSubscriber) async throws {
        let topic = "\(prefix)/\(name)/cmd"
        guard try await subscriber.waitOnline(w.number, timeout: 10) else {
            throw GatewayBenchError.failed("\(name) did not say online on \(prefix)/\(name)/status within 10 s")
        }
        for (k, n) in w.notifiers.enumerated() {
            // As a user would: its advertisement on adv/ADDRESS says the gateway has heard it.
            _ = try await subscriber.waitPublished("\(prefix)/\(name)/adv/\(n.address)", timeout: 10)
            var attempt = 0
            while true {
                attempt += 1
                let id = "\(name)-\(k)-\(attempt)"
                let command = #"{"id":"\#(id)","op":"subscribe","address":"\#(n.address)","characteristic":"\#(GatewayBenchWorld.characteristic)"}"#
                let reply = try await subscriber.command(command, id: id, on: topic, timeout: 20)
                if reply?["ok"] as? Bool == true { break }
                let code = reply?["code"] as? String ?? "no reply within 20 s"
                guard attempt < 40 else {
                    throw GatewayBenchError.failed("\(name) did not subscribe to \(n.address): \(code) \(reply?["error"] as? String ?? "")")
                }
                try await Task.sleep(for: code == "unknown-device" ? .milliseconds(250) : .milliseconds(500))
            }
        }
    }

    /// Empties the retained messages this run left on a broker that is not ours: every device's
    /// advertisement and the gateways' status.
    private func clearRetained(_ subscriber: BenchSubscriber) {
        let topics = subscriber.advertisementTopics.sorted() + names.flatMap { ["\(prefix)/\($0)/status", "\(prefix)/\($0)/status/stats"] }
        for t in topics { _ = try? subscriber.client.publish(MQTTMessage(topic: t, payload: [], qos: 1, retain: true)) }
        usleep(300_000)
    }

    // MARK: Common

    private func buildWorlds() async throws -> [GatewayBenchWorld] {
        var worlds: [GatewayBenchWorld] = []
        do {
            for g in 0..<options.gateways { worlds.append(try await GatewayBenchWorld.build(number: g, options: options)) }
        } catch {
            for w in worlds { await w.close() }
            throw error
        }
        return worlds
    }

    /// Starts the traffic, warms up, and measures the window between `start` and `end` (with
    /// `snapshot` taken just inside each end); then stops the traffic and drains.
    private func measure(_ worlds: [GatewayBenchWorld], ledger: NotificationLedger, brokerCPU: @Sendable () -> Double?,
                         start: () -> Void,
                         snapshot: () async -> [GatewayStatisticsSnapshot] = { [] },
                         started: ([GatewayStatisticsSnapshot]) -> Void = { _ in },
                         end: () -> Void,
                         ended: ([GatewayStatisticsSnapshot]) -> Void = { _ in }) async throws -> Window {
        for w in worlds { w.startTraffic(ledger: ledger) }
        try await Task.sleep(for: .seconds(warmUp))
        started(await snapshot())
        start()
        ledger.startRecording()
        let wall0 = monotonicSeconds(), cpu0 = cpuSeconds(), broker0 = brokerCPU()
        try await Task.sleep(for: .seconds(options.seconds))
        let wall1 = monotonicSeconds(), cpu1 = cpuSeconds(), broker1 = brokerCPU()
        ledger.stopRecording()
        end()
        ended(await snapshot())
        for w in worlds { await w.stopTraffic() }
        try await Task.sleep(for: .seconds(drain))
        var window = Window(cpu: cpu1 - cpu0, wall: wall1 - wall0)
        if let b0 = broker0, let b1 = broker1 { window.brokerCPU = b1 - b0 }
        return window
    }
}

/// What the radio-only pass's centrals got per radio while counting.
private final class RadioOnlyTally: Sendable {
    private let state: Mutex<(reports: [Int], values: [Int], counting: Bool)>

    init(radios: Int) { state = Mutex(([Int](repeating: 0, count: radios), [Int](repeating: 0, count: radios), false)) }

    func counting(_ on: Bool) { state.withLock { $0.counting = on } }
    func count(report radio: Int) { state.withLock { if $0.counting { $0.reports[radio] += 1 } } }
    func count(value radio: Int) { state.withLock { if $0.counting { $0.values[radio] += 1 } } }
    var counts: (reports: [Int], values: [Int]) { state.withLock { ($0.reports, $0.values) } }
}

/// The counts of a gateway's `status/stats` (`Gateway.statisticsJSON`, the same payload) the
/// report uses.
struct GatewayStatisticsSnapshot: Sendable {
    var reports = 0, notifications = 0, published = 0, acknowledged = 0, reconnections = 0
    var droppedNotifications = 0, droppedAdvertisements = 0, droppedControl = 0, superseded = 0
    var queuedNotifications = 0, inFlight = 0, devices = 0, subscriptions = 0

    init(_ json: JSON) {
        func int(_ path: String...) -> Int {
            var node = json
            for key in path {
                guard case let .object(fields) = node, let next = fields.first(where: { $0.0 == key })?.1 else { return 0 }
                node = next
            }
            if case let .int(i) = node { return i }
            return 0
        }
        reports = int("reports")
        notifications = int("notifications")
        published = int("published")
        acknowledged = int("acknowledged")
        reconnections = int("reconnections")
        droppedNotifications = int("dropped", "notifications")
        droppedAdvertisements = int("dropped", "advertisements")
        droppedControl = int("dropped", "control")
        superseded = int("advertisementsSuperseded")
        queuedNotifications = int("queued", "notifications")
        inFlight = int("inFlight")
        devices = int("devices")
        subscriptions = int("subscriptions")
    }
}
