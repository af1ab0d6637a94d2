/// One link's Security Manager channel (fixed CID 0x0006, Core spec Vol 3 Part H §3). Sans-IO:
/// the owner hands in each SMP PDU received on the link and sends what comes back on the same
/// channel.
///
/// Pairing is not implemented yet (the security issue builds it here): a Pairing Request or a
/// Security Request is answered at once with Pairing Failed "Pairing Not Supported"
/// (§3.5.5, reason 0x05), so the peer never waits for its 30-second SMP timeout (§3.4). Every
/// other command is dropped: without a pairing in progress none of them is expected, and
/// answering them could make two stacks reply to each other forever.
public struct SMPChannel: Sendable {
    public init() {}

    /// Takes one SMP PDU from the peer; returns the PDU to send back, if any.
    public mutating func receive(_ pdu: [UInt8]) -> [UInt8]? {
        guard let first = pdu.first else { return nil }
        switch SMPCode(rawValue: first) {
        case .pairingRequest, .securityRequest:
            return [SMPCode.pairingFailed.rawValue, SMPPairingFailedReason.pairingNotSupported.rawValue]
        default:
            return nil
        }
    }
}
