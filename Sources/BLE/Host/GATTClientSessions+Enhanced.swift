import BLEHCI
import BLEHost

/// Our GATT client on Enhanced ATT bearers (Core spec Vol 3 Part G §5.3, Vol 3 Part F
/// §3.2.11): the hooks the host calls for each bearer, both for bearers our client opened
/// (`HostController.openEnhancedATTBearers`) and for those the peer opened to our server.
/// The client's per-bearer state goes in `Link.enhancedClients`, keyed by the channel's local
/// CID; what it sends goes out with `HostController.sendATT(_:handle:bearer:)`.
///
/// Until the client runs procedures on these bearers (the eatt-client part), what reaches it
/// there is only logged.
extension GATTClientSessions {
    /// A response, notification or indication for our client on the Enhanced ATT bearer `cid`.
    func receiveEnhanced(_ payload: [UInt8], handle: UInt16, cid: UInt16, _ host: isolated HostController) {
        host.log("ATT PDU 0x\(String(payload.first ?? 0, radix: 16)) for our client on \(ATTBearerID.enhanced(cid: cid)) ignored")
    }

    /// An Enhanced ATT bearer opened on `handle` with this ATT_MTU.
    func enhancedBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated HostController) {}

    /// An Enhanced ATT bearer closed: only its own procedures fail (with `error`).
    func enhancedBearerClosed(handle: UInt16, cid: UInt16, error: BLEError, _ host: isolated HostController) {
        host.connections.links.withLink(handle) { $0.enhancedClients[cid] = nil }
    }

    /// SDUs queued on the bearer went out: room for more there.
    func enhancedBearerSent(handle: UInt16, cid: UInt16, _ host: isolated HostController) {}

    /// The bearer's channel was reconfigured: its ATT_MTU is now `mtu` (Vol 3 Part F §3.2.8).
    func enhancedBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated HostController) {}

    /// Transaction timeouts of the link's Enhanced ATT bearers (Vol 3 Part F §3.3.3), called with
    /// the unenhanced bearer's.
    func expireEnhancedBearers(handle: UInt16, now: Duration, _ host: isolated HostController) {}
}
