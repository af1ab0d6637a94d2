import BLEHCI
import BLEWire

/// How a peripheral advertises. Legacy advertising (Core spec Vol 6 Part B §2.3.1, HCI Vol 4
/// Part E §7.8.5–9) is what every controller supports; `kind` leaves room for extended
/// advertising sets (§7.8.53 onwards), which would add a case here without changing callers.
public struct AdvertisingParameters: Sendable, Hashable {
    /// Which legacy advertising PDU is sent, and so whether centrals may scan and connect
    /// (Vol 6 Part B §2.3.1).
    public enum Kind: Sendable, Hashable {
        /// ADV_IND: centrals may connect and scan.
        case connectable
        /// ADV_SCAN_IND: scannable, not connectable.
        case scannable
        /// ADV_NONCONN_IND: a beacon.
        case nonConnectable

        var hciType: AdvertisingType {
            switch self {
            case .connectable: return .connectableUndirected
            case .scannable: return .scannableUndirected
            case .nonConnectable: return .nonConnectableUndirected
            }
        }
    }

    /// Connectable (the default), scannable only, or a non-connectable beacon.
    public var kind: Kind
    /// Advertising interval range. The spec allows 20 ms to 10.24 s (units of 0.625 ms).
    public var intervalMin: Duration
    /// The upper end of the interval range; the controller advertises at an interval between
    /// `intervalMin` and this. Equal to `intervalMin` for a fixed interval.
    public var intervalMax: Duration
    /// Advertise again when a connection made from this advertising ends.
    public var restartAfterDisconnect: Bool
    /// Keep advertising while centrals are connected, so more can connect (legacy connectable
    /// advertising stops at each connection, Vol 6 Part B §4.4.2.2; the host turns it back on,
    /// and a controller that cannot serve another link answers Command Disallowed).
    public var continueWhileConnected: Bool

    /// Makes parameters advertising every `interval` (100 ms by default) or, with `intervalMax`, at
    /// an interval in that range; the range is checked against 20 ms ... 10.24 s when advertising starts.
    public init(kind: Kind = .connectable, interval: Duration = .milliseconds(100), intervalMax: Duration? = nil,
                restartAfterDisconnect: Bool = true, continueWhileConnected: Bool = true) {
        self.kind = kind
        self.intervalMin = interval
        self.intervalMax = intervalMax ?? interval
        self.restartAfterDisconnect = restartAfterDisconnect
        self.continueWhileConnected = continueWhileConnected
    }

    /// The interval in 0.625 ms units, validated against Vol 4 Part E §7.8.5.
    func units() throws -> (min: UInt16, max: UInt16) {
        let lo = AdvertisingSetParameters.units(intervalMin, 625), hi = AdvertisingSetParameters.units(intervalMax, 625)
        guard (0x0020...0x4000).contains(lo), (0x0020...0x4000).contains(hi), lo <= hi else {
            throw BLEError.invalidArgument("advertising interval must be 20 ms ... 10.24 s with min ≤ max")
        }
        return (UInt16(lo), UInt16(hi))
    }
}

/// The address a device uses on the air. Core spec Vol 6 Part B §1.3.
public enum OwnAddress: Sendable, Hashable {
    /// The controller's public BD_ADDR.
    case `public`
    /// A static random address (two top bits 11), set with LE Set Random Address.
    case staticRandom(BDAddress)
    /// Privacy (Core spec Vol 3 Part C §10.7): a resolvable private address made from the local
    /// identity's IRK (Vol 6 Part B §1.3.2.2), set with LE Set Random Address and renewed every
    /// `rotation`. Bonded peers resolve it to our identity address, the one pairing distributes;
    /// nobody else can link two of them.
    case resolvablePrivate(rotation: Duration)

    /// Privacy with the 15-minute address lifetime the spec recommends (Vol 3 Part C Appendix A,
    /// T_GAP(private_addr_int)).
    public static var privacy: OwnAddress { .resolvablePrivate(rotation: .seconds(900)) }
}
