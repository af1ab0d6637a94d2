import BLEHCI
import BLEHost

/// Our GATT server on Enhanced ATT bearers (Core spec Vol 3 Part G §5.3, Vol 3 Part F
/// §3.2.11): one `ATTServer` per bearer in `Link.enhancedServers`, keyed by the channel's local
/// CID, with its own ATT_MTU (the channel's), request flow and outstanding indication.
extension GATTServerSessions {
    /// A request, command or confirmation for our server on `bearer` of this link.
    func receive(_ payload: [UInt8], handle: UInt16, bearer: ATTBearerID, _ host: isolated HostController) {
        guard case let .enhanced(cid) = bearer else { return receive(payload, handle: handle, host) }
        host.log("ATT PDU 0x\(String(payload.first ?? 0, radix: 16)) for our server on \(ATTBearerID.enhanced(cid: cid)) not served yet")
    }

    /// An Enhanced ATT bearer opened on `handle` with this ATT_MTU: it gets a server of its own.
    func enhancedBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated HostController) {
        let preferred = host.configuration.preferredATTMTU
        host.connections.links.withLink(handle) {
            var server = ATTServer(preferredMTU: preferred)
            server.mtu = mtu
            $0.enhancedServers[cid] = server
        }
    }

    /// An Enhanced ATT bearer closed: its server and what it had pending go.
    func enhancedBearerClosed(handle: UInt16, cid: UInt16, error: BLEError, _ host: isolated HostController) {
        host.connections.links.withLink(handle) { $0.enhancedServers[cid] = nil }
    }

    /// The bearer's channel was reconfigured: its ATT_MTU is now `mtu` (Vol 3 Part F §3.2.8).
    func enhancedBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated HostController) {
        host.connections.links.withLink(handle) { $0.enhancedServers[cid]?.mtu = mtu }
    }

    /// Indication timeouts of the link's Enhanced ATT bearers (Vol 3 Part F §3.3.3).
    func expireEnhancedBearers(handle: UInt16, now: Duration, _ host: isolated HostController) {}
}
