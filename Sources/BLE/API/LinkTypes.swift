import BLEHCI

/// Connection parameters in the controller's units (Vol 4 Part E §7.7.65.3): interval ×1.25 ms,
/// supervision timeout ×10 ms.
public struct LinkParameters: Sendable, Hashable {
    /// Connection interval in units of 1.25 ms (6...3200, i.e. 7.5 ms to 4 s; Core spec
    /// Vol 6 Part B §4.5.1): how often the two ends meet to exchange packets.
    public var interval: UInt16
    /// Peripheral latency: how many consecutive connection events the peripheral may skip (0...499).
    public var latency: UInt16
    /// Supervision timeout in units of 10 ms (10...3200, i.e. 100 ms to 32 s): how long the link
    /// survives without a packet before it is considered lost.
    public var supervisionTimeout: UInt16

    /// The connection interval in milliseconds (`interval` × 1.25 ms).
    public var intervalMilliseconds: Double { Double(interval) * 1.25 }
    /// The supervision timeout in milliseconds (`supervisionTimeout` × 10 ms).
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
    /// The link is up.
    case connected
    /// `disconnect()` has been asked for and the controller has not yet reported the link down.
    case disconnecting
    /// The link is down, for `reason`: the Reason of HCI Disconnection Complete (Core spec Vol 4
    /// Part E §7.7.5), e.g. Connection Timeout (0x08) when the peer went out of range.
    case disconnected(reason: HCIStatus)

    /// A readable form for logs, e.g. `connected` or `disconnected (…)` with the HCI reason.
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
    /// This host initiated the link (LE Create Connection) and is its central.
    case central
    /// A central connected to this host's advertising; this host is the peripheral.
    case peripheral
}
