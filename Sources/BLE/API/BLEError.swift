import BLEHCI
import BLEHost
import BLEWire

/// Every failure the public API reports: which layer failed, whether the local side or the peer,
/// and the protocol's own code where there is one.
public enum BLEError: Error, Sendable, CustomStringConvertible {
    /// The controller refused or failed a command, timed out, or reported a hardware error.
    case hci(HCIError)
    /// A GATT/ATT procedure failed: the peer's ATT error code, a malformed response, or the
    /// 30-second transaction timeout (after which the bearer is closed, Vol 3 Part F §3.3.3).
    case gatt(GATTError)
    /// The transport to the controller failed or closed.
    case transport(String)
    /// An operation did not finish within its deadline.
    case timeout(String)
    /// The link went down; `reason` is the HCI reason from Disconnection Complete.
    case disconnected(reason: HCIStatus)
    /// A connection attempt ended with an error status (e.g. 0x3E: failed to be established).
    case connectionFailed(HCIStatus)
    /// The operation needs a connection that is not (or no longer) there.
    case notConnected
    /// Bad input from the user of the API (a value too long, an unknown characteristic).
    case invalidArgument(String)
    /// The controller cannot do this (e.g. no LE support, a command it does not know).
    case unsupported(String)
    /// Another operation of the same kind is already running (one scan, one pending connect).
    case busy(String)
    /// Pairing failed or security could not be raised: the Pairing Failed reason and which side
    /// gave it, the SMP timeout, or an encryption failure (Core spec Vol 3 Part H §3.5.5).
    case security(SMPPairingError)
    /// An LE credit-based L2CAP channel could not be opened, was closed, or the peer broke its
    /// rules and we disconnected it (Core spec Vol 3 Part A §4.22–§4.24, §10.2).
    case l2cap(L2CAPChannelError)
    /// A periodic advertising sync was lost: the train was not heard within its sync timeout
    /// (LE Periodic Advertising Sync Lost, Core spec Vol 4 Part E §7.7.65.16).
    case periodicSyncLost(String)
    /// The stack was closed.
    case closed

    /// The layer that failed, as a short tag for logs and metrics: `hci`, `att`, `transport`,
    /// `link`, `smp`, `l2cap` or `host`.
    public var layer: String {
        switch self {
        case .hci, .connectionFailed: return "hci"
        case .gatt: return "att"
        case .transport: return "transport"
        case .disconnected, .notConnected: return "link"
        case .security: return "smp"
        case .l2cap: return "l2cap"
        default: return "host"
        }
    }

    /// A readable form for logs, e.g. `connection failed: …` or `timed out: …`.
    public var description: String {
        switch self {
        case let .hci(e): return "HCI: \(e)"
        case let .gatt(e): return "GATT: \(e)"
        case let .transport(m): return "transport: \(m)"
        case let .timeout(m): return "timed out: \(m)"
        case let .disconnected(reason): return "disconnected: \(reason)"
        case let .connectionFailed(status): return "connection failed: \(status)"
        case .notConnected: return "not connected"
        case let .invalidArgument(m): return "invalid argument: \(m)"
        case let .unsupported(m): return "unsupported: \(m)"
        case let .busy(m): return "busy: \(m)"
        case let .security(e): return "security: \(e)"
        case let .l2cap(e): return "L2CAP: \(e)"
        case let .periodicSyncLost(m): return "periodic advertising sync lost: \(m)"
        case .closed: return "the host stack is closed"
        }
    }
}
