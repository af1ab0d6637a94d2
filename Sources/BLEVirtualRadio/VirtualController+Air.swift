import BLEHCI
import BLEWire

/// The inputs a controller gets from the medium rather than from its host: advertising heard,
/// a link established or lost, ACL data from the peer. Each returns what goes to this
/// controller's host. Core spec Vol 6 Part B §4 (link layer) as seen through HCI (Vol 4 Part E).
extension VirtualController {
    /// An advertising event from another controller (Vol 6 Part B §4.4.3, scanning state). An
    /// active scanner of a scannable advertiser also gets the scan response, as if its SCAN_REQ
    /// had been answered at once. Reports go out only when LE Advertising Report is unmasked.
    public mutating func hear(_ adv: VirtualAdvertisement, rssi: Int8) -> [HostBoundPacket] {
        guard isScanning, leEventEnabled(bit: 1) else { return [] }
        var reports: [LEAdvertisingReport] = []
        func add(_ type: LegacyAdvertisingEventType, _ data: [UInt8]) {
            // §7.8.11: with the duplicate filter on, each address and PDU type is reported once
            // per scan.
            let key = ReportKey(address: adv.address, type: type)
            if filterDuplicates {
                guard !reported.contains(key) else { return }
                reported.insert(key)
            }
            reports.append(LEAdvertisingReport(legacy: type, address: adv.address, data: data, rssi: rssi))
        }
        add(adv.reportType, adv.data)
        if activeScan && adv.isScannable { add(.scanRsp, adv.scanResponse) }
        return reports.map { .event(.le(.advertisingReport([$0]))) }
    }

    /// Whether this controller is initiating towards `adv` (§7.8.12, peer address filter only).
    public func isInitiating(to adv: VirtualAdvertisement) -> Bool {
        guard let i = initiation, adv.isConnectable else { return false }
        return i.peer.address == adv.address.address && i.peer.type.peerType == adv.address.type.peerType
    }

    /// The address this controller goes on air with while initiating.
    public var initiatorAddress: DeviceAddress? { initiation?.ownAddress }

    /// A link came up. The central leaves the initiating state, the peripheral stops advertising
    /// (Vol 6 Part B §4.5, §7.8.9: advertising ends when a connection is created). Returns the
    /// new handle and the Connection Complete for the host.
    public mutating func connected(role: LERole, peer: DeviceAddress, interval: UInt16, latency: UInt16,
                                   supervisionTimeout: UInt16) -> (handle: UInt16, toHost: [HostBoundPacket]) {
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        switch role {
        case .central: initiation = nil
        case .peripheral: isAdvertising = false
        }
        connections[handle] = Connection(role: role, peer: peer, interval: interval, latency: latency, supervisionTimeout: supervisionTimeout)
        let event = connectionCompleteEvent(LEConnectionComplete(
            status: .success, handle: handle, role: role, peer: peer, interval: interval, latency: latency,
            supervisionTimeout: supervisionTimeout, centralClockAccuracy: 0))
        return (handle, event.map { [.event($0)] } ?? [])
    }

    /// An ACL packet from the host (Vol 4 Part E §5.4.2). The buffer is freed at once (the
    /// virtual air never backs up in this slice), so the credit returns with Number Of
    /// Completed Packets (§7.7.19). Packets for an unknown handle are dropped.
    public mutating func receiveFromHost(_ packet: ACLPacket) -> ControllerOutput {
        guard connections[packet.handle] != nil else { return ControllerOutput() }
        var out = ControllerOutput()
        out.air.append(.acl(handle: packet.handle, packet: packet))
        out.event(.numberOfCompletedPackets([CompletedPackets(handle: packet.handle, count: 1)]))
        return out
    }

    /// ACL data from the peer, cut to this controller's LE buffer length. A start fragment is
    /// marked "first flushable", as controllers mark data towards the host (§5.4.2).
    public func deliverFromPeer(handle: UInt16, packet: ACLPacket) -> [HostBoundPacket] {
        guard connections[handle] != nil else { return [] }
        let size = max(1, Int(configuration.leACLBufferLength))
        var first = packet.boundary.isStart
        var offset = 0
        var out: [HostBoundPacket] = []
        repeat {
            let end = min(offset + size, packet.data.count)
            let chunk = Array(packet.data[offset..<end])
            out.append(.acl(ACLPacket(handle: handle, boundary: first ? .firstFlushable : .continuing, data: chunk)))
            first = false
            offset = end
        } while offset < packet.data.count
        return out
    }

    /// The link ended from the far side (`reason` as the peer gave it, or a timeout).
    public mutating func linkLost(handle: UInt16, reason: HCIStatus) -> [HostBoundPacket] {
        guard connections.removeValue(forKey: handle) != nil, eventEnabled(bit: 4) else { return [] }
        return [.event(.disconnectionComplete(status: .success, handle: handle, reason: reason))]
    }

    /// New parameters took effect on the link (LE Connection Update Complete, §7.7.65.3).
    public mutating func connectionUpdated(handle: UInt16, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16) -> [HostBoundPacket] {
        guard connections[handle] != nil else { return [] }
        connections[handle]?.interval = interval
        connections[handle]?.latency = latency
        connections[handle]?.supervisionTimeout = supervisionTimeout
        guard leEventEnabled(bit: 2) else { return [] }
        return [.event(.le(.connectionUpdateComplete(status: .success, handle: handle, interval: interval,
                                                      latency: latency, supervisionTimeout: supervisionTimeout)))]
    }
}
