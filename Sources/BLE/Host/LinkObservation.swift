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
        var maxTxOctets = 27
        var maxRxOctets = 27
        /// Services found by discovery, until a Service Changed indication covers them.
        var services: [GATTService] = []
    }

    private let storage: Mutex<Snapshot>
    private let watchers = Mutex<[UInt64: AsyncStream<ConnectionState>.Continuation]>([:])
    private let nextWatcher = Atomic<UInt64>(1)

    init(parameters: LinkParameters) {
        storage = Mutex(Snapshot(parameters: parameters))
    }

    var snapshot: Snapshot { storage.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) {
        let (old, new) = storage.withLock { s -> (ConnectionState, ConnectionState) in
            let old = s.state
            body(&s)
            return (old, s.state)
        }
        if old != new {
            let list = watchers.withLock { Array($0.values) }
            for w in list {
                w.yield(new)
                if case .disconnected = new { w.finish() }
            }
        }
    }

    /// Drops discovered services that overlap `range` (Vol 3 Part G §7.1: after Service Changed
    /// the client must rediscover them).
    func invalidateServices(in range: ClosedRange<UInt16>) {
        storage.withLock { s in
            s.services.removeAll { $0.startHandle <= range.upperBound && $0.endHandle >= range.lowerBound }
        }
    }

    /// Every state change from now on; finishes after the disconnect.
    func stateUpdates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream<ConnectionState>.makeStream()
        let current = snapshot.state
        continuation.yield(current)
        if case .disconnected = current {
            continuation.finish()
            return stream
        }
        let id = nextWatcher.wrappingAdd(1, ordering: .relaxed).oldValue
        watchers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.watchers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }
}

