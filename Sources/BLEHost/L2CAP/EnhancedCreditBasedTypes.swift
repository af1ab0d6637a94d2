import BLEWire

/// Which credit-based mode a channel was opened in. Both carry the same K-frames and credits
/// (Core spec Vol 3 Part A §3.4.3, §10.2); they differ in how channels open and what may change
/// afterwards.
public enum CreditBasedMode: Sendable, Hashable, CustomStringConvertible {
    /// LE Credit Based Flow Control mode: one channel per LE Credit Based Connection Request,
    /// MTU ≥ 23, MPS 23–65533, fixed for the channel's life (§4.22, §4.23).
    case leCreditBased
    /// Enhanced Credit Based Flow Control mode: up to five channels per Credit Based Connection
    /// Request, MTU ≥ 64, MPS 64–65533, both reconfigurable (§4.25–§4.28).
    case enhancedCreditBased

    /// `LE credit-based` or `enhanced credit-based`.
    public var description: String {
        switch self {
        case .leCreditBased: return "LE credit-based"
        case .enhancedCreditBased: return "enhanced credit-based"
        }
    }
}

extension CreditBasedChannelParameters {
    /// The smallest MTU and MPS of the enhanced credit-based mode (Vol 3 Part A §4.25–§4.27).
    public static let enhancedMinimum: UInt16 = 64

    /// MTU ≥ 64 and MPS in 64...65533: what an enhanced credit-based channel allows (§4.25, §4.26).
    public var isValidEnhanced: Bool {
        mtu >= Self.enhancedMinimum && (Self.enhancedMinimum...Self.maximumMPS).contains(mps)
    }

    /// These parameters with MTU and MPS raised to the enhanced mode's minimum of 64 where they
    /// are below it: what a listener set up for both modes offers an enhanced request.
    public var raisedToEnhancedMinimum: CreditBasedChannelParameters {
        CreditBasedChannelParameters(mtu: max(mtu, Self.enhancedMinimum), mps: max(mps, Self.enhancedMinimum),
                                     initialCredits: initialCredits)
    }
}

extension LESignalingCommand {
    /// Credit Based Reconfigure Request data (Vol 3 Part A §4.27): the sender's new MTU and MPS
    /// for up to five of its channels. Despite the field's name, the CIDs are the sender's own
    /// endpoints (the receiver's remote CIDs), as in the Flow Control Credit.
    public struct CreditBasedReconfigureRequest: Sendable, Hashable {
        /// At most five channels per request.
        public static let maximumChannels = 5
        public var mtu: UInt16
        public var mps: UInt16
        public var destinationCIDs: [UInt16]

        public init(mtu: UInt16, mps: UInt16, destinationCIDs: [UInt16]) {
            self.mtu = mtu
            self.mps = mps
            self.destinationCIDs = destinationCIDs
        }
    }

    /// Result of a Credit Based Reconfigure Request (Vol 3 Part A §4.28).
    public struct CreditBasedReconfigureResult: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let success = CreditBasedReconfigureResult(rawValue: 0x0000)
        /// A channel's new MTU was smaller than its current one.
        public static let mtuReductionNotAllowed = CreditBasedReconfigureResult(rawValue: 0x0001)
        /// The MPS got smaller on a request naming more than one channel.
        public static let mpsReductionNotAllowed = CreditBasedReconfigureResult(rawValue: 0x0002)
        /// A CID in the request names no enhanced channel of the link.
        public static let invalidDestinationCID = CreditBasedReconfigureResult(rawValue: 0x0003)
        /// MTU or MPS out of range, or no CID or more than five.
        public static let unacceptableParameters = CreditBasedReconfigureResult(rawValue: 0x0004)

        /// The spec's wording, e.g. `reduction in size of MTU not allowed (0x0001)`.
        public var description: String {
            let text: String
            switch rawValue {
            case 0x0000: text = "reconfiguration successful"
            case 0x0001: text = "reduction in size of MTU not allowed"
            case 0x0002: text = "reduction in size of MPS not allowed for more than one channel at a time"
            case 0x0003: text = "one or more destination CIDs invalid"
            case 0x0004: text = "other unacceptable parameters"
            default: text = "reserved"
            }
            let h = String(rawValue, radix: 16, uppercase: true)
            return text + " (0x" + String(repeating: "0", count: max(0, 4 - h.count)) + h + ")"
        }
    }
}
