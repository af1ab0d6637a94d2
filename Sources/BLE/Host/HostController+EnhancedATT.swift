import BLEHCI
import BLEHost

/// The seam between L2CAP and the GATT parts for Enhanced ATT (Core spec Vol 3 Part G §5.3,
/// Vol 3 Part F §3.2.11): one way to send an ATT PDU on any bearer, the opening of bearers for
/// the client, and the bearer events both GATT roles hear. The unenhanced bearer (fixed CID
/// 0x0004) needs none of it: it exists for the link's whole life.
extension HostController {
    /// Our L2CAP parameters for an Enhanced ATT bearer, both directions: the ATT_MTU we offer as
    /// the channel's MTU (the bearer's ATT_MTU is the smaller of both sides', Vol 3 Part F
    /// §3.2.8), K-frames that fill a 251-octet LE data payload, and credits for a few PDUs.
    nonisolated var enhancedATTChannelParameters: CreditBasedChannelParameters { Self.enhancedATTChannelParameters(configuration) }

    static func enhancedATTChannelParameters(_ configuration: HostConfiguration) -> CreditBasedChannelParameters {
        let mtu = UInt16(clamping: max(configuration.preferredATTMTU, Int(CreditBasedChannelParameters.enhancedMinimum)))
        return CreditBasedChannelParameters(mtu: mtu, mps: min(247, mtu), initialCredits: 16)
    }

    /// The listener that accepts Enhanced ATT bearers when the host offers EATT: enhanced
    /// credit-based mode only (Vol 3 Part G §5.3.1), on an encrypted link only (an unencrypted
    /// one is refused with Insufficient Authentication, or Insufficient Encryption when the
    /// peer is bonded).
    static func enhancedATTListener(_ configuration: HostConfiguration) -> CreditBasedListener {
        var listener = CreditBasedListener(parameters: enhancedATTChannelParameters(configuration),
                                           security: L2CAPSecurityRequirement(level: .encrypted))
        listener.modes = [.enhancedCreditBased]
        return listener
    }

    /// Sends one ATT PDU on `bearer` of the link `handle`: a basic frame on the fixed channel, or
    /// one SDU on the bearer's channel (queued there until the peer's credits let it out). False
    /// when the bearer is not open or the PDU exceeds the peer's MTU (nothing is sent).
    @discardableResult
    func sendATT(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) -> Bool {
        switch bearer {
        case .unenhanced:
            guard connections.links.contains(handle) else { return false }
            sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: pdu)
            return true
        case let .enhanced(cid):
            guard l2cap.isATTBearer(handle: handle, cid: cid),
                  let actions = router.send(pdu, handle: handle, cid: cid, token: 0) else {
                log("ATT PDU of \(pdu.count) bytes not sent on \(bearer) of 0x\(String(handle, radix: 16))")
                return false
            }
            connections.perform(actions, handle: handle, self)
            return true
        }
    }

    /// How many SDUs wait on an Enhanced ATT bearer's channel for the peer's credits (0 for the
    /// unenhanced bearer, whose backlog is the ACL queue's): what the senders keep small.
    func queuedATTSDUs(handle: UInt16, bearer: ATTBearerID) -> Int {
        guard case let .enhanced(cid) = bearer else { return 0 }
        return router.channel(handle: handle, cid: cid)?.queuedSDUs ?? 0
    }

    /// Opens `count` (1...5) Enhanced ATT bearers on the link `linkID` (one Credit Based
    /// Connection Request, Vol 3 Part A §4.25, on SPSM 0x0027) and returns those the peer
    /// accepted; each was announced to both GATT roles (`enhancedATTBearerOpened`) before this
    /// returns. A refusal for want of security raises it (when the security settings say so)
    /// and tries once more. Fails with `.l2cap(.refused(result))` when the peer accepts none.
    func openEnhancedATTBearers(linkID: UInt64, count: Int) async throws -> [ATTBearerID] {
        let parameters = enhancedATTChannelParameters
        // Known to the background set-up while this runs (the pairing below starts it), which
        // then counts these against its target instead of opening more.
        let handle = connections.links.handle(forID: linkID)
        if let handle { client.enhancedSetups.request(handle: handle, adding: count) }
        defer { if let handle { client.enhancedSetups.request(handle: handle, adding: -count) } }
        return try await raisingSecurityOnRefusal(linkID: linkID) {
            try await l2cap.openATTBearers(linkID: linkID, count: count, parameters: parameters, self)
        }
    }

    /// Closes an Enhanced ATT bearer of the link `linkID`; `enhancedATTBearerClosed` follows.
    func closeEnhancedATTBearer(linkID: UInt64, _ bearer: ATTBearerID) {
        guard case let .enhanced(cid) = bearer, let handle = connections.links.handle(forID: linkID) else { return }
        l2cap.closeATTBearer(handle: handle, cid: cid, self)
    }

    // MARK: - Bearer events, to both roles

    /// A new Enhanced ATT bearer is open on `handle` with this ATT_MTU (`openedByPeer`: the peer
    /// opened it, else our client did).
    func enhancedATTBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, openedByPeer: Bool) {
        server.enhancedBearerOpened(handle: handle, cid: cid, mtu: mtu, openedByPeer: openedByPeer, self)
        client.enhancedBearerOpened(handle: handle, cid: cid, mtu: mtu, self)
    }

    /// An Enhanced ATT bearer closed (either side, or a broken rule): each role fails only that
    /// bearer's own work; the link and its other bearers go on.
    func enhancedATTBearerClosed(handle: UInt16, cid: UInt16, error: BLEError) {
        server.enhancedBearerClosed(handle: handle, cid: cid, error: error, self)
        client.enhancedBearerClosed(handle: handle, cid: cid, error: error, self)
    }

    /// SDUs queued on an Enhanced ATT bearer went out: room for more there.
    func enhancedATTBearerSent(handle: UInt16, cid: UInt16) {
        server.pumpNotifications(handle: handle, self)
        client.enhancedBearerSent(handle: handle, cid: cid, self)
    }

    /// An Enhanced ATT bearer's channel was reconfigured: its ATT_MTU is now `mtu`.
    func enhancedATTBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int) {
        server.enhancedBearerMTUChanged(handle: handle, cid: cid, mtu: mtu, self)
        client.enhancedBearerMTUChanged(handle: handle, cid: cid, mtu: mtu, self)
    }
}
