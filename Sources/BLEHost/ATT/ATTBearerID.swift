/// Which ATT bearer of a link a PDU travels on (Core spec Vol 3 Part F §3.2.11): the unenhanced
/// bearer on the fixed channel 0x0004, or an Enhanced ATT bearer, an L2CAP enhanced
/// credit-based channel on SPSM 0x0027 (Vol 3 Part G §5.3), named by our local CID of it.
/// Every bearer carries both directions: the local server's requests, commands and
/// confirmations and the local client's responses, notifications and indications.
public enum ATTBearerID: Hashable, Sendable, CustomStringConvertible {
    /// The one unenhanced bearer of the link (fixed CID 0x0004, Vol 3 Part A §2.1).
    case unenhanced
    /// An Enhanced ATT bearer: the enhanced credit-based channel whose local CID is `cid`.
    case enhanced(cid: UInt16)

    /// The SPSM of Enhanced ATT (Assigned Numbers §5.4; Core spec Vol 3 Part G §5.3).
    public static let enhancedATTPSM: UInt16 = 0x0027

    /// Whether this is an Enhanced ATT bearer.
    public var isEnhanced: Bool {
        if case .enhanced = self { return true }
        return false
    }

    /// `unenhanced` or e.g. `EATT 0x0040`.
    public var description: String {
        switch self {
        case .unenhanced: return "unenhanced"
        case let .enhanced(cid):
            let h = String(cid, radix: 16, uppercase: true)
            return "EATT 0x" + String(repeating: "0", count: max(0, 4 - h.count)) + h
        }
    }
}
