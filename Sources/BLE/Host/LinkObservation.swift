import BLEHCI
import BLEHost
import Synchronization

/// Observable facts of one link, shared between the host actor (which writes) and the API
/// objects (which read synchronously, like CoreBluetooth's properties).
final class LinkObservation: Sendable {
    struct Snapshot: Sendable {
        var state: ConnectionState = .connected
        var mtu: Int = 23
        var parameters: LinkParameters
        /// Current PHY and LL payload sizes (LE PHY Update Complete, LE Data Length Change).
        var phy: LEPHY = .le1M
        /// The channel selection algorithm, 1 or 2 (§7.7.65.20), when the controller said.
        var channelSelectionAlgorithm: Int?
        var maxTxOctets = 27
        var maxRxOctets = 27
        /// Services found by discovery, until a Service Changed indication covers them.
        var services: [GATTService] = []
        /// Every service, primary or secondary, whose characteristics were discovered
        /// (`Peripheral.discoverCharacteristics`), by start handle, until a Service Changed
        /// indication covers it: a characteristic's service when it is not in `services`.
        var characteristicServices: [GATTService] = []
        /// Characteristics `Peripheral.characteristic(_:)` found by UUID through the attribute
        /// cache, with no service, until a Service Changed indication covers them.
        var lookedUpCharacteristics: [GATTCharacteristic] = []
        /// How many changes of the server's database (Service Changed, Vol 3 Part G §7.1) the
        /// link was told of.
        var databaseChanges = 0
        /// The ranges of the last `recentChangesKept` of them, oldest first.
        var recentChanges: [ClosedRange<UInt16>] = []
        /// The last pairing on the link that ended without keys (central role: a peripheral's
        /// peripheral-started pairing included, which no call of the application waits for).
        var lastPairingFailure: SMPPairingError?

        static let recentChangesKept = 16

        /// The handles changed since `databaseChanges` was `count`: the whole database when
        /// more changes came than are kept.
        func changes(since count: Int) -> [ClosedRange<UInt16>] {
            let since = databaseChanges - count
            guard since > 0 else { return [] }
            guard since <= recentChanges.count else { return [0x0001...0xFFFF] }
            return Array(recentChanges.suffix(since))
        }
    }

    private let storage: Mutex<Snapshot>
    private let watchers = WatcherSet<ConnectionState>()
    private let securityWatchers = WatcherSet<LinkSecurityEvent>()
    private let parameterWatchers = WatcherSet<LinkParameters>()
    private let nextWatcher = Atomic<UInt64>(1)

    init(parameters: LinkParameters) {
        storage = Mutex(Snapshot(parameters: parameters))
    }

    var snapshot: Snapshot { storage.withLock { $0 } }

    /// Applies `body`; a state change is yielded to every watcher while the state lock is held,
    /// so a watcher registering at the same moment sees each change exactly once and in order.
    func update(_ body: (inout Snapshot) -> Void) {
        storage.withLock { s in
            let old = (s.state, s.parameters)
            body(&s)
            if old.1 != s.parameters { parameterWatchers.yield(s.parameters) }
            guard old.0 != s.state else { return }
            watchers.yield(s.state)
            if case .disconnected = s.state {
                watchers.finish()
                securityWatchers.finish()
                parameterWatchers.finish()
            }
        }
    }

    /// Tells every `securityEvents()` watcher what just happened to the link's security.
    func reportSecurity(_ event: LinkSecurityEvent) {
        storage.withLock { _ in securityWatchers.yield(event) }
    }

    /// Every security event from now on; finishes after the disconnect (at once when the link
    /// is down already). Registered under the state lock, as `stateUpdates` is.
    func securityEvents() -> AsyncStream<LinkSecurityEvent> { events(securityWatchers) }

    /// The link's connection parameters each time they change from now on (LE Connection
    /// Update Complete); finishes after the disconnect.
    func parameterUpdates() -> AsyncStream<LinkParameters> { events(parameterWatchers) }

    /// A watcher of `set` from now on, starting with `current` of the snapshot when given;
    /// registered under the state lock, so no change between the two is missed or seen twice.
    private func events<Element: Sendable>(_ set: WatcherSet<Element>, startingWith current: ((Snapshot) -> Element)? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id = nextWatcher.wrappingAdd(1, ordering: .relaxed).oldValue
        continuation.onTermination = { [weak set] _ in set?.remove(id) }
        let watching = storage.withLock { s -> Bool in
            if let current { continuation.yield(current(s)) }
            if case .disconnected = s.state { return false }
            set.add(id, continuation)
            return true
        }
        if !watching { continuation.finish() }
        return stream
    }

    /// Drops discovered services that overlap `range` (Vol 3 Part G §7.1: after Service Changed
    /// the client must rediscover them) and records the change.
    func invalidateServices(in range: ClosedRange<UInt16>) {
        storage.withLock { s in
            s.services.removeAll { $0.handleRange.overlaps(range) }
            s.characteristicServices.removeAll { $0.handleRange.overlaps(range) }
            s.lookedUpCharacteristics.removeAll { ($0.declarationHandle...$0.endHandle).overlaps(range) }
            s.databaseChanges += 1
            s.recentChanges.append(range)
            if s.recentChanges.count > Snapshot.recentChangesKept { s.recentChanges.removeFirst() }
        }
    }

    /// The current state, then every change from now on; finishes after the disconnect. The
    /// current state is read and the watcher registered under the state lock, so a disconnect
    /// that happens meanwhile is never missed.
    func stateUpdates() -> AsyncStream<ConnectionState> { events(watchers, startingWith: { $0.state }) }
}

/// The continuations of one kind of link event, each watcher's by its id.
final class WatcherSet<Element: Sendable>: Sendable {
    private let continuations = Mutex<[UInt64: AsyncStream<Element>.Continuation]>([:])

    func add(_ id: UInt64, _ continuation: AsyncStream<Element>.Continuation) { continuations.withLock { $0[id] = continuation } }
    func remove(_ id: UInt64) { _ = continuations.withLock { $0.removeValue(forKey: id) } }
    func yield(_ element: Element) { for c in continuations.withLock({ Array($0.values) }) { c.yield(element) } }
    func finish() { for c in continuations.withLock({ Array($0.values) }) { c.finish() } }
}
