import BLE
import BLEProfiles
import BLEWire
import Synchronization

/// `ble serve accel`: the accelerometer peripheral of docs/SYSTEMS.md S4. Service 0x0011 with one
/// characteristic 0x0012 (Notify property, readable permission) carrying `AccelerometerSample`s:
/// 12 bytes, x, y, z as Float32 little-endian.
///
/// It samples every 0.2 s, and only while at least one central is subscribed. When a central's
/// notification queue is full it waits for the ready-to-update signal
/// (`.readyToUpdateSubscribers`, CoreBluetooth's `peripheralManagerIsReady(toUpdateSubscribers:)`)
/// and sends the same sample again, so nothing is dropped and the order is kept. Subscriptions,
/// reads and writes are logged. Reads return the last sample taken (zeros before the first);
/// writes are refused by the server with Write Not Permitted (no write permission).
public struct AccelerometerServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "accel"
    /// The line `ble serve --help` shows.
    public static let summary = "accelerometer service 0011: x, y, z notified on 0012 at 5 Hz while subscribed (--source sim|FILE|-)"

    /// Where samples come from (`--source`).
    public var source = AccelerometerSampleSource.simulated(SimulatedMotion())
    /// Time between samples (the article's 0.2 s; tests shorten it to load the link).
    public var interval = AccelerometerProfile.sampleInterval
    var handles: GATTServiceHandles?
    /// Subscribers, the last sample and counts, shared with the event and read handlers.
    public let state = AccelerometerServeState()
    /// Taken in `install`, before advertising starts (as `EchoServeProfile` does): a central
    /// quick to subscribe, before `run` begins, is still seen as a subscriber.
    var events: PeripheralManagerEventStream?

    /// `--source sim|FILE|-`, opened now so a file that cannot be read stops the server before
    /// it starts.
    public mutating func configure(_ options: ServeProfileOptions) throws {
        if let text = options.source { source = try .open(text) }
    }

    /// True with `--source -`: stdin carries samples, not keys.
    public var usesStandardInput: Bool { source.readsStandardInput }

    /// The profile with `ble serve`'s defaults (`configure` changes what the command gives).
    public init() {}

    /// Adds service 0011 and the read handler that answers with the last sample.
    public mutating func install(on manager: PeripheralManager) async throws {
        let handles = try await manager.add(GATTServiceDefinition(uuid: AccelerometerProfile.service, characteristics: [
            GATTCharacteristicDefinition(uuid: AccelerometerProfile.sample, properties: [.notify], permissions: [.read], value: nil,
                                         maximumLength: AccelerometerSample.encodedLength),
        ]))
        self.handles = handles
        events = await manager.events
        if let handle = handles.valueHandle(for: AccelerometerProfile.sample) {
            let state = self.state
            await manager.setReadHandler(forHandle: handle) { request in
                let value = state.lastValue
                state.logRead(request, value: value)
                guard request.offset <= value.count else { return .failure(.invalidOffset) }
                return .success(Array(value[request.offset...]))
            }
        }
    }

    /// 0011 and the name.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        (AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([AccelerometerProfile.service]).localName(name).build(), nil)
    }

    /// Follows subscriptions and samples while anyone is subscribed, until cancelled.
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = handles?.valueHandle(for: AccelerometerProfile.sample), let events else { return }
        state.setLog(log)
        // Wake-ups for the sampler: a subscription changed, a central left, or a full queue has
        // room again. Only the latest matters (the sampler looks at the state when it wakes).
        let (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let state = self.state
        let source = self.source
        let interval = self.interval
        // Both run until cancelled: after a file or stdin ends the peripheral stays up (reads
        // still answer) until interrupted, so nothing queued is cut off by a disconnect.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    if state.observe(event, sampleHandle: handle) { wake.yield() }
                }
                wake.finish()
            }
            group.addTask {
                try await Self.sample(on: manager, handle: handle, source: source, interval: interval, state: state, wakeups: wakeups)
            }
            try await group.waitForAll()
        }
    }

    /// Takes a sample every `interval` while someone is subscribed and notifies it, waiting for
    /// the ready signal whenever the queue is full.
    static func sample(on manager: PeripheralManager, handle: UInt16, source: AccelerometerSampleSource, interval: Duration,
                       state: AccelerometerServeState, wakeups: AsyncStream<Void>) async throws {
        let clock = manager.clock
        let start = clock.now()
        var reader = AccelerometerSampleReader(source)
        var wake = wakeups.makeAsyncIterator()
        var deadline = start
        var pending: AccelerometerSample?
        while !Task.isCancelled {
            if state.subscriberCount == 0 {
                guard await wake.next() != nil else { return }
                deadline = clock.now()
                continue
            }
            // Ticks on the clock, not "interval after the last send": the rate stays 5 Hz, and
            // after a wait for room the next tick is not made up for with a burst.
            deadline = max(deadline + interval, clock.now())
            try await clock.sleep(until: deadline)
            if pending == nil {
                guard let sample = await reader.next(at: clock.now() - start) else {
                    state.sourceEnded(skipped: reader.skipped, source: source)
                    return
                }
                pending = sample
            }
            guard let sample = pending else { continue }
            sending: while !Task.isCancelled {
                switch await manager.updateValue(sample.encoded(), forHandle: handle) {
                case .queued(centrals: 0):
                    break sending // nobody subscribed any more: the sample waits for the next one
                case .queued:
                    state.sent(sample)
                    pending = nil
                    break sending
                case .queueFull:
                    state.queueFull()
                    guard await wake.next() != nil else { return }
                }
            }
        }
    }
}

/// What the accelerometer peripheral knows while it runs: who is subscribed, the last sample,
/// and counts a test or the log can show.
public final class AccelerometerServeState: Sendable {
    /// The state at one moment.
    public struct Snapshot: Sendable {
        /// The centrals subscribed to 0012.
        public var subscribers: Set<ConnectedCentral> = []
        /// The last sample sent.
        public var last: AccelerometerSample?
        /// Samples sent.
        public var sent = 0
        /// Times an update found a queue full and waited for the ready signal.
        public var queueFullWaits = 0
        /// Whether the sampler waits for the ready-to-update signal now.
        public var waitingForRoom = false
        /// Where the profile logs.
        public var log: ServeLog?
    }

    private let state = Mutex(Snapshot())

    /// The state now.
    public var snapshot: Snapshot { state.withLock { $0 } }
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    var lastValue: [UInt8] { state.withLock { $0.last?.encoded() ?? [UInt8](repeating: 0, count: AccelerometerSample.encodedLength) } }

    func setLog(_ log: ServeLog?) { state.withLock { $0.log = log } }

    /// Follows an event; returns whether the sampler should look at the state again.
    func observe(_ event: PeripheralManagerEvent, sampleHandle: UInt16) -> Bool {
        switch event {
        case let .subscriptionChanged(central, handle, notifications, _) where handle == sampleHandle:
            let (log, count, changed) = state.withLock { s -> (ServeLog?, Int, Bool) in
                let changed = notifications ? s.subscribers.insert(central).inserted : s.subscribers.remove(central) != nil
                return (s.log, s.subscribers.count, changed)
            }
            if changed { logSubscription(log, central, subscribed: notifications, count: count, disconnected: false) }
            return true
        case let .disconnected(central, _):
            let (log, count, removed) = state.withLock { s -> (ServeLog?, Int, Bool) in
                let removed = s.subscribers.remove(central) != nil
                return (s.log, s.subscribers.count, removed)
            }
            // CoreBluetooth reports a subscribed central that goes away as unsubscribed.
            if removed { logSubscription(log, central, subscribed: false, count: count, disconnected: true) }
            return true
        case let .request(central, opcode, handle?) where handle == sampleHandle && Self.writeOpcodes.contains(opcode):
            let log = state.withLock { $0.log }
            log?.line("write", [("central", .string(central.address.address.description)), ("handle", .int(Int(handle))), ("refused", .string("Write Not Permitted (0x03)"))],
                      text: "write: \(central.address) 0x\(String(format4: handle)) refused: Write Not Permitted (0x03)")
            return false
        case .readyToUpdateSubscribers:
            let (log, waited) = state.withLock { s -> (ServeLog?, Bool) in
                defer { s.waitingForRoom = false }
                return (s.log, s.waitingForRoom)
            }
            if waited { log?.line("ready", [], text: "ready to update subscribers: sending again") }
            return true
        default:
            return false
        }
    }

    static let writeOpcodes: Set<ATTOpcode> = [.writeRequest, .writeCommand, .prepareWriteRequest, .signedWriteCommand]

    private func logSubscription(_ log: ServeLog?, _ central: ConnectedCentral, subscribed: Bool, count: Int, disconnected: Bool) {
        let fields: [(String, JSON)] = [("central", .string(central.address.address.description)), ("subscribers", .int(count))]
            + (disconnected ? [("disconnected", .bool(true))] : [])
        let word = subscribed ? "subscribed" : "unsubscribed"
        let rate = count == 0 ? "sampling paused" : "sampling at \(Self.rate) to \(count) central\(count == 1 ? "" : "s")"
        log?.line(word, fields, text: "\(word): \(central.address)\(disconnected ? " (disconnected)" : "") — \(rate)")
    }

    static let rate = "5 Hz"

    func logRead(_ request: GATTReadRequest, value: [UInt8]) {
        let log = state.withLock { $0.log }
        let shown = (try? AccelerometerSample(decoding: value)).map { "x=\($0.x) y=\($0.y) z=\($0.z)" } ?? value.hexString
        log?.line("read", [("central", .string(request.central.address.address.description)), ("handle", .int(Int(request.handle))), ("hex", .string(value.hexString))],
                  text: "read: \(request.central.address) 0x\(String(format4: request.handle)) \(shown)")
    }

    func sent(_ sample: AccelerometerSample) {
        state.withLock {
            $0.last = sample
            $0.sent += 1
        }
    }

    func queueFull() {
        let (log, first) = state.withLock { s -> (ServeLog?, Bool) in
            s.queueFullWaits += 1
            defer { s.waitingForRoom = true }
            return (s.log, !s.waitingForRoom)
        }
        if first { log?.line("queueFull", [], text: "queue full: waiting for the ready signal") }
    }

    func sourceEnded(skipped: Int, source: AccelerometerSampleSource) {
        let (log, sent) = state.withLock { ($0.log, $0.sent) }
        var origin = "source"
        if case let .lines(_, name) = source { origin = name }
        log?.line("sourceEnded", [("sent", .int(sent)), ("skipped", .int(skipped))],
                  text: "samples: \(origin) ended after \(sent) sample(s) sent\(skipped > 0 ? ", \(skipped) line(s) skipped" : "")")
    }
}
