import BLEHCI

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

/// Which end of the link this host is. Core spec Vol 4 Part E §7.7.65.1.
public enum ConnectionRole: Sendable, Hashable {
    case central, peripheral
}
