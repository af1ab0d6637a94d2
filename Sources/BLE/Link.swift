import BLEHCI
import BLEHost
import BLEWire
import Synchronization

/// Connection parameters in the controller's units (Vol 4 Part E §7.7.65.3): interval ×1.25 ms,
/// supervision timeout ×10 ms.
public struct LinkParameters: Sendable, Hashable {
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    public var intervalMilliseconds: Double { Double(interval) * 1.25 }
    public var supervisionTimeoutMilliseconds: Int { Int(supervisionTimeout) * 10 }

    /// The ranges of Vol 4 Part E §7.8.12 and the rule that the supervision timeout exceeds
    /// (1 + latency) × interval × 2.
    static func isValid(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
        guard (6...3200).contains(intervalMin), (6...3200).contains(intervalMax), intervalMin <= intervalMax,
              latency <= 499, (10...3200).contains(timeout) else { return false }
        return Int(timeout) * 4 > (1 + Int(latency)) * Int(intervalMax)
    }
}

/// The state of a connection as the API shows it.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    case connected
    case disconnecting
    case disconnected(reason: HCIStatus)

    public var description: String {
        switch self {
        case .connected: return "connected"
        case .disconnecting: return "disconnecting"
        case let .disconnected(reason): return "disconnected (\(reason))"
        }
    }
}

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

/// One LE connection's state inside the host actor.
struct Link {
    let id: UInt64
    let handle: UInt16
    let peer: DeviceAddress
    let role: ConnectionRole
    var parameters: LinkParameters
    var bearer: ATTClientBearer
    /// Our GATT server's side of this link's ATT bearer (CCCDs, MTU, queues are per connection).
    var server: ATTServer
    var security = LinkSecurity(encrypted: false, authenticated: false, authorized: false)
    var signaling = LESignalingChannel()
    var procedureWaiters: [UInt64: CheckedContinuation<GATTOutput, any Error>] = [:]
    var notificationSinks: [UInt16: [UInt64: AsyncStream<[UInt8]>.Continuation]] = [:]
    /// Value handles of Service Changed characteristics learned by discovery (Vol 3 Part G §7.1).
    var serviceChangedHandles: Set<UInt16> = []
    var servicesChangedSinks: [UInt64: AsyncStream<ClosedRange<UInt16>>.Continuation] = [:]
    var disconnected = OneShot<HCIStatus>()
    var encrypted = false
    var maxTxOctets = 27
    var maxRxOctets = 27
    var txPHY: LEPHY = .le1M
    var rxPHY: LEPHY = .le1M
    let observation: LinkObservation

    func publish() {
        let p = parameters
        // One ATT_MTU per bearer: whichever side exchanged last set it for both (Vol 3 Part F §3.4.2).
        let mtu = max(bearer.mtu, server.mtu)
        let (phy, tx, rx) = (txPHY, maxTxOctets, maxRxOctets)
        observation.update { s in
            s.parameters = p
            s.mtu = mtu
            s.phy = phy
            s.maxTxOctets = tx
            s.maxRxOctets = rx
        }
    }
}

/// An indication queued by `updateValue`, until its confirmation (or the link closing).
struct IndicationWaiter {
    let valueHandle: UInt16
    let linkHandle: UInt16
    let continuation: CheckedContinuation<Void, any Error>?
}

/// A task waiting for a link's ACL queue to reach a state (room for a write, fully sent).
struct ACLWaiter {
    let handle: UInt16
    let condition: (ACLFlowController) -> Bool
    let continuation: CheckedContinuation<Void, Never>
}

/// Which end of the link this host is. Core spec Vol 4 Part E §7.7.65.1.
public enum ConnectionRole: Sendable, Hashable {
    case central, peripheral
}
