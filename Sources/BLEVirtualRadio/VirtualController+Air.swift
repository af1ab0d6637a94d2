import BLEHCI
import BLEWire

/// The inputs a controller gets from the medium rather than from its host: advertising heard,
/// a link established or lost, ACL data from the peer, the peer's part of a link procedure. Each
/// returns what goes to this controller's host. Core spec Vol 6 Part B §4 (link layer) as seen
/// through HCI (Vol 4 Part E).
extension VirtualController {
    /// The address this controller scans with (§7.8.10 Own_Address_Type).
    var scannerAddress: DeviceAddress? { ownAddress(type: scanOwnAddressType) }

    /// Whether an advertiser with `policy` bit `bit` set accepts a request from `address`
    /// (§7.8.5 Advertising_Filter_Policy).
    static func advertiser(_ adv: VirtualAdvertisement, accepts address: DeviceAddress?, bit: UInt8) -> Bool {
        guard adv.filterPolicy & bit != 0 else { return true }
        guard let address else { return false }
        return adv.filterAcceptList.contains(address)
    }

    /// An advertising event from another controller (Vol 6 Part B §4.4.3, scanning state). An
    /// active scanner of a scannable advertiser also gets the scan response, as if its SCAN_REQ
    /// had been answered at once. Reports go out only when LE Advertising Report is unmasked.
    /// Directed advertising reaches only its target; scan filter policy 1 (§7.8.10) admits only
    /// advertisers on the Filter Accept List.
    /// An extended scan reports with `hearExtended` instead; a legacy one does not hear extended
    /// PDUs. `received` is for extended PDUs only (`hearExtended`).
    public mutating func hear(_ adv: VirtualAdvertisement, rssi: Int8, received: Int? = nil) -> [HostBoundPacket] {
        if extendedScanning { return hearExtended(adv, rssi: rssi, received: received) }
        guard isScanning, adv.extended == nil, leEventEnabled(bit: 1) else { return [] }
        if let target = adv.directTarget, target != scannerAddress { return [] }
        if scanFilterPolicy & 0x01 != 0, !filterAcceptList.contains(adv.address.withPeerType) { return [] }
        // With address resolution on, a resolved RPA is reported as the identity (§7.7.65.2).
        guard let heard = reported(adv.address)?.address else { return [] }
        var reports: [LEAdvertisingReport] = []
        func add(_ type: LegacyAdvertisingEventType, _ data: [UInt8]) {
            // §7.8.11: with the duplicate filter on, each address and PDU type is reported once
            // per scan.
            let key = ReportKey(address: heard, type: type)
            if filterDuplicates {
                guard !reported.contains(key) else { return }
                reported.insert(key)
            }
            reports.append(LEAdvertisingReport(legacy: type, address: heard, data: data, rssi: rssi))
        }
        add(adv.reportType, adv.data)
        if activeScan && adv.isScannable && Self.advertiser(adv, accepts: scannerAddress, bit: 0x01) {
            add(.scanRsp, adv.scanResponse)
        }
        if !configuration.quirks.isEmpty { return quirkyReports(reports) }
        return reports.map { .event(.le(.advertisingReport([$0]))) }
    }

    /// Whether this controller is initiating towards `adv` (§7.8.12): the named peer, or any
    /// device on the Filter Accept List; the advertiser's own filter and direction must admit us.
    public func isInitiating(to adv: VirtualAdvertisement) -> Bool {
        guard let i = initiation, adv.isConnectable else { return false }
        // An extended advertiser is found only by LE Extended Create Connection, each on a
        // primary PHY the initiator scans (§7.8.66).
        if adv.extended != nil && !i.extended { return false }
        guard i.phys.contains(adv.extended?.primaryPHY == .leCoded ? .leCoded : .le1M) else { return false }
        if let peer = i.peer {
            guard matches(adv.address, target: peer) else { return false }
        } else {
            guard filterAcceptList.contains(adv.address.withPeerType) else { return false }
        }
        if let target = adv.directTarget, target != i.ownAddress { return false }
        return Self.advertiser(adv, accepts: i.ownAddress, bit: 0x02)
    }

    /// The address this controller goes on air with while initiating.
    public var initiatorAddress: DeviceAddress? { initiation?.ownAddress }

    /// A link came up. The central leaves the initiating state, the peripheral stops advertising
    /// (Vol 6 Part B §4.5, §7.8.9: advertising ends when a connection is created). Returns the
    /// new handle and the Connection Complete for the host.
    public mutating func connected(role: LERole, peer: DeviceAddress, interval: UInt16, latency: UInt16,
                                   supervisionTimeout: UInt16, phy: LEPHY = .le1M, setHandle: UInt8? = nil,
                                   channelSelection2: Bool = false) -> (handle: UInt16, toHost: [HostBoundPacket]) {
        // Handles count up from 0x0040 and wrap at 0x0EFF, skipping those still in use.
        var handle = nextHandle
        while connections[handle] != nil { handle = handle >= 0x0EFF ? 0x0040 : handle + 1 }
        nextHandle = handle >= 0x0EFF ? 0x0040 : handle + 1
        var completedEvents = 0
        switch role {
        case .central: initiation = nil
        case .peripheral:
            if let setHandle {
                completedEvents = advertisingSets[setHandle]?.completedEvents ?? 0
                advertisingSets[setHandle]?.enabled = false
            } else {
                isAdvertising = false
            }
        }
        var connection = Connection(role: role, peer: peer, interval: interval, latency: latency, supervisionTimeout: supervisionTimeout)
        connection.maxTxOctets = suggestedTxOctets
        connection.phy = phy
        connection.syncTransferMode = defaultSyncTransfer.mode
        connection.syncTransferTimeout = defaultSyncTransfer.timeout
        connections[handle] = connection
        // A peer's RPA that the resolving list resolves is reported as its identity, with the
        // RPA alongside in the enhanced event (§7.7.65.10).
        let seen = reported(peer) ?? (peer, nil)
        let event = connectionCompleteEvent(LEConnectionComplete(
            status: .success, handle: handle, role: role, peer: seen.address, peerResolvablePrivateAddress: seen.rpa,
            interval: interval, latency: latency, supervisionTimeout: supervisionTimeout, centralClockAccuracy: 0))
        var toHost: [HostBoundPacket] = event.map { [.event($0)] } ?? []
        // LE Channel Selection Algorithm (§7.7.65.20), after the connection's event.
        if leEventEnabled(bit: 19) {
            toHost.append(.event(.le(.channelSelectionAlgorithm(handle: handle, algorithm: channelSelection2 ? 1 : 0))))
        }
        // A connection made from an advertising set ends it (§7.7.65.18).
        if role == .peripheral, let setHandle, leEventEnabled(bit: 17) {
            toHost.append(.event(.le(.advertisingSetTerminated(LEAdvertisingSetTerminated(
                status: .success, advertisingHandle: setHandle, connectionHandle: handle,
                completedEvents: UInt8(clamping: completedEvents))))))
        }
        return (handle, toHost)
    }

    /// An ACL packet from the host (Vol 4 Part E §5.4.2). Without the air-time model the buffer
    /// is freed at once and the credit returns with Number Of Completed Packets (§7.7.19); with
    /// it, the medium returns the credit when the packet has gone over the air
    /// (`completedPackets`). Packets for an unknown handle are dropped.
    public mutating func receiveFromHost(_ packet: ACLPacket, creditAtOnce: Bool = true) -> ControllerOutput {
        guard connections[packet.handle] != nil else { return ControllerOutput() }
        var out = ControllerOutput()
        out.air.append(.acl(handle: packet.handle, packet: packet))
        if creditAtOnce { out.event(.numberOfCompletedPackets([CompletedPackets(handle: packet.handle, count: 1)])) }
        return out
    }

    /// Number Of Completed Packets for packets the air has carried.
    public func completedPackets(handle: UInt16, count: Int) -> [HostBoundPacket] {
        guard connections[handle] != nil, count > 0 else { return [] }
        return [.event(.numberOfCompletedPackets([CompletedPackets(handle: handle, count: UInt16(clamping: count))]))]
    }

    /// ACL data from the peer, cut to this controller's LE buffer length. A start fragment is
    /// marked "first flushable", as controllers mark data towards the host (§5.4.2).
    public func deliverFromPeer(handle: UInt16, packet: ACLPacket) -> [HostBoundPacket] {
        var out: [HostBoundPacket] = []
        emitFromPeer(handle: handle, packet: packet) { out.append($0) }
        return out
    }

    /// `deliverFromPeer(handle:packet:)` handing each packet to `emit`, in order, with no array
    /// in between (the medium appends them to the batch it builds). `mutating` only so that the
    /// medium calls it on the controller where it lies: a non-mutating call on an element of
    /// its node array copies the whole node first.
    /// `knownConnected`: the caller has just seen `handle` connected here, with nothing in
    /// between that could end the connection (the medium's route for a batch of ACL packets),
    /// so the connection is not looked up again.
    mutating func deliverFromPeer(handle: UInt16, packet: ACLPacket, knownConnected: Bool = false, _ emit: (HostBoundPacket) -> Void) {
        emitFromPeer(handle: handle, packet: packet, knownConnected: knownConnected, emit)
    }

    /// Whether a packet of `dataCount` data bytes from the peer fits one of this controller's
    /// buffers, so `passThrough` hands it to the host as it came. `mutating` only so that the
    /// medium calls it on the controller where it lies (a non-mutating call copied the whole
    /// node first).
    mutating func fitsOneBuffer(dataCount: Int) -> Bool {
        dataCount <= max(1, Int(configuration.leACLBufferLength))
    }

    /// `deliverFromPeer` for a packet that fits one of this controller's buffers
    /// (`fitsOneBuffer`), from the frame its sender's host wrote (header checked): the same
    /// bytes with the header rewritten as `deliverFromPeer` would encode it (this connection's
    /// `handle`, first-flushable or continuing, point-to-point; §5.4.2), so the data is neither
    /// decoded nor copied. A header that already reads so (a continuing fragment on equal
    /// handles) is not touched at all; one that does not is rewritten in the frame's own bytes
    /// when the caller gave up its reference to them. The caller knows the connection.
    static func passThrough(_ frame: consuming H4Frame, isStart: Bool, handle: UInt16) -> H4Frame {
        var out = frame
        guard out.payload.count >= 4 else { return out }
        let boundary: PacketBoundary = isStart ? .firstFlushable : .continuing
        let word = (handle & 0x0FFF) | UInt16(boundary.rawValue) << 12
        let (low, high) = (UInt8(word & 0xFF), UInt8(word >> 8))
        if out.payload[0] != low || out.payload[1] != high {
            out.payload[0] = low
            out.payload[1] = high
        }
        return out
    }

    private func emitFromPeer(handle: UInt16, packet: ACLPacket, knownConnected: Bool = false, _ emit: (HostBoundPacket) -> Void) {
        guard knownConnected || connections.index(forKey: handle) != nil else { return }
        let size = max(1, Int(configuration.leACLBufferLength))
        if packet.data.count <= size {
            // Fits one buffer: the packet's own bytes go on, not a copy.
            emit(.acl(ACLPacket(handle: handle, boundary: packet.boundary.isStart ? .firstFlushable : .continuing, data: packet.data)))
            return
        }
        var first = packet.boundary.isStart
        var offset = 0
        repeat {
            let end = min(offset + size, packet.data.count)
            let chunk = Array(packet.data[offset..<end])
            emit(.acl(ACLPacket(handle: handle, boundary: first ? .firstFlushable : .continuing, data: chunk)))
            first = false
            offset = end
        } while offset < packet.data.count
    }

    /// High duty cycle directed advertising ran 1.28 s without a connection (§7.8.9).
    public mutating func directedAdvertisingTimedOut() -> [HostBoundPacket] {
        isAdvertising = false
        let peer = advertisingPeer ?? DeviceAddress(BDAddress(rawValue: 0), type: .public)
        guard let e = connectionCompleteEvent(LEConnectionComplete(
            status: HCIStatus(0x3C), handle: 0, role: .peripheral, peer: peer, interval: 0, latency: 0,
            supervisionTimeout: 0, centralClockAccuracy: 0)) else { return [] }
        return [.event(e)]
    }

    /// The link ended from the far side (`reason` as the peer gave it, or a timeout).
    public mutating func linkLost(handle: UInt16, reason: HCIStatus) -> [HostBoundPacket] {
        guard connections.removeValue(forKey: handle) != nil, eventEnabled(bit: 4) else { return [] }
        let event = HostBoundPacket.event(.disconnectionComplete(status: .success, handle: handle, reason: reason))
        return configuration.quirks.isEmpty ? [event] : [event] + afterDisconnectionComplete(handle: handle)
    }

    /// New parameters took effect on the link (LE Connection Update Complete, §7.7.65.3).
    public mutating func connectionUpdated(handle: UInt16, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16,
                                           status: HCIStatus = .success) -> [HostBoundPacket] {
        guard connections[handle] != nil else { return [] }
        if status.isSuccess {
            connections[handle]?.interval = interval
            connections[handle]?.latency = latency
            connections[handle]?.supervisionTimeout = supervisionTimeout
        }
        guard leEventEnabled(bit: 2) else { return [] }
        return [.event(.le(.connectionUpdateComplete(status: status, handle: handle, interval: interval,
                                                      latency: latency, supervisionTimeout: supervisionTimeout)))]
    }

    /// The peripheral asks for parameters (§7.7.65.6). Returns nil when this host has the event
    /// masked: the controller then decides alone (and accepts).
    public mutating func parameterRequest(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                                          supervisionTimeout: UInt16) -> [HostBoundPacket]? {
        guard connections[handle] != nil, leEventEnabled(bit: 5) else { return nil }
        connections[handle]?.awaitingParameterReply = true
        return [.event(.le(.remoteConnectionParameterRequest(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                                             maxLatency: latency, timeout: supervisionTimeout)))]
    }

    /// The link's payload sizes changed (LE Data Length Change, §7.7.65.7).
    public func dataLengthChanged(handle: UInt16, maxTxOctets: UInt16, maxRxOctets: UInt16) -> [HostBoundPacket] {
        guard connections[handle] != nil, leEventEnabled(bit: 6) else { return [] }
        // The time of that many octets on LE 1M with a MIC, (octets + 14) × 8 µs, in the range
        // §7.7.65.7 allows (0x0148–0x4290).
        func time(_ octets: UInt16) -> UInt16 { UInt16(min(max((Int(octets) + 14) * 8, 328), 17_040)) }
        return [.event(.le(.dataLengthChange(handle: handle, maxTxOctets: maxTxOctets, maxTxTime: time(maxTxOctets),
                                             maxRxOctets: maxRxOctets, maxRxTime: time(maxRxOctets))))]
    }

    /// The PHY Update procedure ended (LE PHY Update Complete, §7.7.65.12).
    public mutating func phyUpdated(handle: UInt16, phy: LEPHY, status: HCIStatus = .success) -> [HostBoundPacket] {
        guard connections[handle] != nil else { return [] }
        if status.isSuccess { connections[handle]?.phy = phy }
        guard leEventEnabled(bit: 11) else { return [] }
        return [.event(.le(.phyUpdateComplete(status: status, handle: handle, txPHY: phy, rxPHY: phy)))]
    }

    /// The central started encryption: the peripheral's host is asked for the key (LE Long Term
    /// Key Request, §7.7.65.5). Nil when the event is masked: the controller answers "no key".
    public mutating func longTermKeyRequested(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16) -> [HostBoundPacket]? {
        guard connections[handle] != nil, leEventEnabled(bit: 4) else { return nil }
        connections[handle]?.awaitingLongTermKey = true
        return [.event(.le(.longTermKeyRequest(handle: handle, randomNumber: randomNumber, encryptedDiversifier: encryptedDiversifier)))]
    }

    /// Encryption started, was refreshed, or failed (Encryption Change §7.7.8, event mask bit 7;
    /// Encryption Key Refresh Complete §7.7.39, bit 47).
    public mutating func encryptionChanged(handle: UInt16, status: HCIStatus) -> [HostBoundPacket] {
        guard let c = connections[handle] else { return [] }
        if status.isSuccess && c.encrypted {
            guard eventEnabled(bit: 47) else { return [] }
            return [.event(.encryptionKeyRefreshComplete(status: status, handle: handle))]
        }
        if status.isSuccess { connections[handle]?.encrypted = true }
        guard eventEnabled(bit: 7) else { return [] }
        return [.event(.encryptionChange(status: status, handle: handle, enabled: status.isSuccess || c.encrypted))]
    }
}

extension DeviceAddress {
    /// The address with its type reduced to public/random, as lists and filters compare it.
    var withPeerType: DeviceAddress { DeviceAddress(address, type: type.peerType) }
}
