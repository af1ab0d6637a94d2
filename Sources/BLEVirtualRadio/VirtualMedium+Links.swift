import BLEHCI
import BLEWire

/// Links: data transfer in connection events (the air-time model), the procedures that involve
/// both ends, and link loss. Core spec Vol 6 Part B §4.5 (connection state), §5.1 (link-layer
/// control procedures).
extension VirtualMedium {
    struct LinkEnd: Hashable, Sendable {
        var id: ControllerID
        var handle: UInt16
    }

    /// An ACL packet on its way over the air: how many of its octets are still to send.
    struct InFlight: Sendable {
        var packet: ACLPacket
        var remaining: Int
    }

    struct Link: Sendable {
        var central: LinkEnd
        var peripheral: LinkEnd
        /// Connection events happen at anchor + k × interval.
        var anchor: Duration
        var interval: Duration
        var phy: LEPHY = .le1M
        var encrypted = false
        /// The payload each end may send per PDU: its own maximum, capped by what the other
        /// end can receive (Vol 6 Part B §4.5.10).
        var txOctets: [LinkEnd: UInt16] = [:]
        /// Packets each end has queued, in order.
        var queues: [LinkEnd: [InFlight]] = [:]
        var nextEvent: Duration?
        /// When the last connection event began: data queued after it closed waits for a later one.
        var lastEvent: Duration?
        /// The start of the connection event in progress (nil between events) and its exchanges.
        var eventStart: Duration?
        var eventExchanges = 0
        /// Packets whose last octet went in the exchange in progress: they arrive when it ends.
        var completed: [(LinkEnd, ACLPacket)] = []
        /// Procedures a host started while the peer was out of range: they run when contact
        /// returns (or vanish with the link at its supervision timeout).
        var deferred: [(AirAction, ControllerID)] = []

        var hasQueuedData: Bool { ends.contains { !(queues[$0]?.isEmpty ?? true) } }
        /// When the supervision timeout ends the link (the peer out of range, off, or gone).
        var lossDeadline: Duration?
        /// Set by faults that end the link whatever the range (a dropped link, a reset peer).
        var doomed = false
        /// The key the central started encryption with, until the peripheral's host answers.
        var pendingKey: [UInt8]?
        /// The parameters the peripheral asked for, until the central's host answers.
        var pendingParameters: (interval: UInt16, latency: UInt16, timeout: UInt16)?

        func other(than end: LinkEnd) -> LinkEnd? {
            if end == central { return peripheral }
            if end == peripheral { return central }
            return nil
        }

        var ends: [LinkEnd] { [central, peripheral] }
    }

    func link(of end: LinkEnd) -> (Int, LinkEnd)? {
        // By index: `for (id, link) in links` copies every link it looks at.
        var i = links.startIndex
        while i != links.endIndex {
            if links.values[i].central == end || links.values[i].peripheral == end { return (links.keys[i], end) }
            links.formIndex(after: &i)
        }
        return nil
    }

    /// An ACL packet from `end`'s host without the air-time model: what
    /// `VirtualController.receiveFromHost` and `send(_:from:now:)` do together, without their
    /// intermediate arrays or a copy of the link. The sender's host gets its buffer back at once
    /// (Number Of Completed Packets, Vol 4 Part E §7.7.19), then the peer's host the data, cut to
    /// its controller's buffer length. A packet for a handle the controller does not know is
    /// dropped; one on a link whose peer is out of contact is lost (its credit still returns).
    mutating func forward(_ packet: ACLPacket, from id: ControllerID) -> [Delivery] {
        var deliveries: [Delivery] = []
        var credits = CompletedPacketsTally()
        let frame = packet.h4Frame
        guard let header = ACLHeader(frame.payload) else { return [] }
        forward(frame, header, from: id, into: &deliveries, credits: &credits)
        credits.write(into: &deliveries)
        return deliveries
    }

    /// `forward(_:from:)` for the frame as the host sent it (`header` read from it) appending to
    /// `deliveries` (the batch being built): the credit is counted in `credits`, one Number Of
    /// Completed Packets event per host and batch, as `coalescingCompletedPackets` would merge
    /// them, instead of an event (and two arrays) per fragment; the link and the peer's
    /// controller are used in place, not copied out; and a packet that fits the peer's buffers
    /// goes on in its own bytes (`VirtualController.passThrough`).
    mutating func forward(_ frame: consuming H4Frame, _ header: ACLHeader, from id: ControllerID, into deliveries: inout [Delivery],
                          credits: inout CompletedPacketsTally) {
        let end = LinkEnd(id: id, handle: header.handle)
        // The previous packet of the batch came from the same end: its route still holds (only
        // ACL packets were handled since, and they change no connection, link or time).
        if let route = credits.route, route.from == end {
            credits.credit(handle: header.handle, to: id, in: &deliveries)
            if let peer = route.to, route.peerConnected { deliverFromPeer(consume frame, header, to: peer, into: &deliveries) }
            return
        }
        credits.route = nil
        guard nodes[id.rawValue].controller.connections.index(forKey: header.handle) != nil else { return }
        credits.credit(handle: header.handle, to: id, in: &deliveries)
        guard let (linkID, _) = link(of: end), let index = links.index(forKey: linkID),
              let peer = Self.reachablePeer(of: end, &links.values[index]),
              exists(peer.id), nodes[peer.id.rawValue].onAir else {
            credits.route = (end, nil, false)
            return
        }
        // A peer controller that no longer knows the connection delivers nothing.
        let peerConnected = nodes[peer.id.rawValue].controller.connections.index(forKey: peer.handle) != nil
        credits.route = (end, peer, peerConnected)
        if peerConnected { deliverFromPeer(consume frame, header, to: peer, into: &deliveries) }
    }

    /// The peer's controller hands a packet from the air to its host (the connection known to
    /// it): in the sender's bytes when it fits one buffer, otherwise cut to its buffer length.
    private mutating func deliverFromPeer(_ frame: consuming H4Frame, _ header: ACLHeader, to peer: LinkEnd, into deliveries: inout [Delivery]) {
        if nodes[peer.id.rawValue].controller.fitsOneBuffer(dataCount: header.dataCount) {
            let passed = VirtualController.passThrough(consume frame, isStart: header.boundary.isStart, handle: peer.handle)
            deliveries.append(Delivery(to: peer.id, encodedACL: passed))
            return
        }
        // `header` came from these bytes: the decode cannot fail.
        guard let packet = try? ACLPacket.decode(frame.payload) else { return }
        nodes[peer.id.rawValue].controller.deliverFromPeer(handle: peer.handle, packet: packet, knownConnected: true) {
            deliveries.append(Delivery(to: peer.id, packet: $0))
        }
    }

    /// The header of an encoded HCI ACL data packet (Vol 4 Part E §5.4.2), read in place with
    /// the checks `ACLPacket.decode` makes: four header bytes, then exactly as many data bytes
    /// as the length field says.
    struct ACLHeader {
        let handle: UInt16
        let boundary: PacketBoundary
        let dataCount: Int

        /// Read once per ACL packet, where the packet is received: always inlined there (a call
        /// retained and released the packet's bytes to read four of them).
        @inline(__always)
        init?(_ payload: [UInt8]) {
            guard payload.count >= 4 else { return nil }
            let length = Int(payload[2]) | Int(payload[3]) << 8
            guard payload.count - 4 == length else { return nil }
            let word = UInt16(payload[0]) | UInt16(payload[1]) << 8
            handle = word & 0x0FFF
            // A 2-bit field always maps to one of the four cases.
            boundary = PacketBoundary(rawValue: UInt8((word >> 12) & 0x3)) ?? .continuing
            dataCount = length
        }
    }

    /// The other end of `link` from `end`, nil while the link is out of contact. Takes the link
    /// `inout` so that it is read where it lies (a `Dictionary.Values` read copies the link).
    private static func reachablePeer(of end: LinkEnd, _ link: inout Link) -> LinkEnd? {
        link.lossDeadline == nil ? link.other(than: end) : nil
    }

    /// The packets completed during one batch of host frames, per host: one Number Of
    /// Completed Packets event each (Vol 4 Part E §7.7.19), at the place in the batch of its
    /// first packet, with one entry per handle in the order they first appear and the counts
    /// added (saturating) — what `coalescingCompletedPackets` makes of one event per packet,
    /// without making them. `write(into:)` puts the counts into the batch before it goes out.
    struct CompletedPacketsTally {
        private struct Report {
            let to: ControllerID
            /// Where in the batch its event stands (appended, empty, at the first credit).
            let index: Int
            /// The first handle's entry, kept inline (a batch's credits are mostly one
            /// handle's), then the others in the order they first appear.
            var first: CompletedPackets
            var more: [CompletedPackets] = []

            /// One more completed packet of `handle` (saturating).
            mutating func add(_ handle: UInt16) {
                if first.handle == handle {
                    first.count = Self.incremented(first.count)
                    return
                }
                var e = 0
                while e < more.count, more[e].handle != handle { e += 1 }
                if e == more.count {
                    more.append(CompletedPackets(handle: handle, count: 1))
                } else {
                    more[e].count = Self.incremented(more[e].count)
                }
            }

            private static func incremented(_ count: UInt16) -> UInt16 {
                let (sum, overflow) = count.addingReportingOverflow(1)
                return overflow ? .max : sum
            }
        }

        /// The first host's report, inline (a batch mostly returns credits to one host), and
        /// the others' in the order they first appear: a batch allocates no report array.
        private var first: Report?
        private var others: [Report] = []
        /// Where the last ACL packet of the batch went: its sender's end (known to its
        /// controller), the reachable peer end (nil when it reached no one) and whether the
        /// peer's controller knows that connection. Valid only while nothing but ACL packets is
        /// handled; `receive(_:from:now:into:credits:)` clears it for anything else.
        var route: (from: LinkEnd, to: LinkEnd?, peerConnected: Bool)?

        /// One completed packet of `handle` for `id`'s host.
        mutating func credit(handle: UInt16, to id: ControllerID, in deliveries: inout [Delivery]) {
            if first?.to == id {
                first?.add(handle)
                return
            }
            var r = 0
            while r < others.count, others[r].to != id { r += 1 }
            if r < others.count {
                others[r].add(handle)
                return
            }
            let report = Report(to: id, index: deliveries.count, first: CompletedPackets(handle: handle, count: 1))
            if first == nil { first = report } else { others.append(report) }
            deliveries.append(Delivery(to: id, packet: .event(.numberOfCompletedPackets([]))))
        }

        /// Writes each host's counts into its event in `deliveries` (the batch the credits were
        /// counted in) and starts over. Counts for more handles than one event carries go in
        /// further events at the batch's end.
        mutating func write(into deliveries: inout [Delivery]) {
            if let first { Self.write(first, into: &deliveries) }
            for report in others { Self.write(report, into: &deliveries) }
            first = nil
            others = []
            route = nil
        }

        private static func write(_ report: Report, into deliveries: inout [Delivery]) {
            guard deliveries.indices.contains(report.index) else { return }
            // One handle: the event is encoded from its entry when it goes out, with no array.
            guard !report.more.isEmpty else {
                deliveries[report.index] = Delivery(to: report.to, completedPackets: report.first)
                return
            }
            let entries = [report.first] + report.more
            guard entries.count > HCIEvent.maximumCompletedPacketsEntries else {
                deliveries[report.index].packet = .event(.numberOfCompletedPackets(entries))
                return
            }
            let events = HCIEvent.numberOfCompletedPacketsEvents(entries)
            deliveries[report.index].packet = .event(events[0])
            for e in events.dropFirst() { deliveries.append(Delivery(to: report.to, packet: .event(e))) }
        }
    }

    /// The supervision timeout of a link, from its central's view (10 ms units).
    func supervisionTimeout(of link: Link) -> Duration {
        let units = nodes[link.central.id.rawValue].controller.connections[link.central.handle]?.supervisionTimeout
            ?? nodes[link.peripheral.id.rawValue].controller.connections[link.peripheral.handle]?.supervisionTimeout ?? 420
        return .milliseconds(10 * Int64(units))
    }

    /// What `end` may put in one PDU: its host's choice, capped by the peer's receive maximum;
    /// 27 when either end lacks Data Length Extension (its Link Layer answers LL_LENGTH_REQ with
    /// LL_UNKNOWN_RSP, Vol 6 Part B §5.1.9).
    func effectiveTx(from end: LinkEnd) -> UInt16 {
        let own = nodes[end.id.rawValue].controller.connections[end.handle]?.maxTxOctets ?? 27
        guard let (linkID, _) = link(of: end), let peer = links[linkID]?.other(than: end),
              nodes[end.id.rawValue].controller.hasLEFeature(.leDataPacketLengthExtension),
              nodes[peer.id.rawValue].controller.hasLEFeature(.leDataPacketLengthExtension) else { return 27 }
        return min(own, VirtualController.maximumDataOctets)
    }

    // MARK: Data

    /// An ACL packet from `end`'s host: at once without the air-time model, otherwise queued for
    /// the link's next connection event.
    mutating func send(_ packet: ACLPacket, from end: LinkEnd, now: Duration) -> [Delivery] {
        guard let (linkID, _) = link(of: end), var link = links[linkID], let peer = link.other(than: end) else { return [] }
        guard airTimeModel else {
            guard link.lossDeadline == nil else { return [] }
            return deliver(to: peer.id) { $0.deliverFromPeer(handle: peer.handle, packet: packet) }
        }
        link.queues[end, default: []].append(InFlight(packet: packet, remaining: packet.data.count))
        if link.nextEvent == nil && link.lossDeadline == nil { link.nextEvent = nextEventTime(link, after: now) }
        links[linkID] = link
        return []
    }

    /// The first connection event at or after `now` that has not happened yet: data a host
    /// sends in answer to what an event delivered goes at the following event, as on a real
    /// link, where the event ends long before the host answers.
    func nextEventTime(_ link: Link, after now: Duration) -> Duration {
        var next = link.anchor
        if now > link.anchor {
            let k = Int64(((now - link.anchor) / link.interval).rounded(.up))
            next = link.anchor + link.interval * k
        }
        if let last = link.lastEvent, next <= last { next = last + link.interval }
        return next
    }

    /// One step of a connection event (Vol 6 Part B §4.5.1). First what the previous exchange
    /// completed arrives: each packet whose last octet has now been sent reaches the peer's host,
    /// and its sender's host gets the buffer back (Number Of Completed Packets), so a host can
    /// refill the controller while the event is still open, as with real controllers. Then
    /// procedures held while the link was out of range run. Then the next exchange: the central
    /// sends a PDU and the peripheral answers (an empty PDU when a side has nothing). The event
    /// goes on while either side has data, the next exchange still fits in the interval and no
    /// controller's per-event limit is hit; then it closes and the next waits for an anchor.
    mutating func connectionEvent(_ linkID: Int, at time: Duration) -> [Delivery] {
        guard var link = links[linkID] else { return [] }
        link.nextEvent = nil
        var deliveries: [Delivery] = []
        for (end, packet) in link.completed {
            if let peer = link.other(than: end) {
                deliveries += deliver(to: peer.id) { $0.deliverFromPeer(handle: peer.handle, packet: packet) }
            }
            deliveries += deliver(to: end.id) { $0.completedPackets(handle: end.handle, count: 1) }
        }
        link.completed = []
        let deferred = link.lossDeadline == nil ? link.deferred : []
        link.deferred = link.lossDeadline == nil ? [] : link.deferred
        links[linkID] = link
        for (action, id) in deferred { deliveries += applyLinkProcedure(action, from: id, now: time) }
        // A procedure may have ended the link (different encryption keys).
        guard var link = links[linkID] else { return deliveries }
        guard link.lossDeadline == nil, link.hasQueuedData else {
            link.eventStart = nil
            links[linkID] = link
            return deliveries
        }
        if link.eventStart == nil {
            link.eventStart = time
            link.eventExchanges = 0
            link.lastEvent = time
        }
        let start = link.eventStart ?? time
        let limits = link.ends.compactMap { nodes[$0.id.rawValue].controller.configuration.maximumPDUsPerConnectionEvent }
        let c = link.queues[link.central]?.first.map { min($0.remaining, Int(link.txOctets[link.central] ?? 27)) } ?? 0
        let p = link.queues[link.peripheral]?.first.map { min($0.remaining, Int(link.txOctets[link.peripheral] ?? 27)) } ?? 0
        let exchange = AirTime.exchange(payload: c, answer: p, phy: link.phy, encrypted: link.encrypted)
        if link.eventExchanges > 0 && (time + exchange > start + link.interval || link.eventExchanges >= (limits.min() ?? Int.max)) {
            // This event is full: the rest waits for the next anchor after it.
            link.eventStart = nil
            link.nextEvent = nextEventTime(link, after: time)
            links[linkID] = link
            return deliveries
        }
        link.eventExchanges += 1
        for (end, sent) in [(link.central, c), (link.peripheral, p)] {
            guard var queue = link.queues[end], !queue.isEmpty else { continue }
            queue[0].remaining -= sent
            if queue[0].remaining <= 0 { link.completed.append((end, queue.removeFirst().packet)) }
            link.queues[end] = queue
        }
        // The exchange ends after `exchange`: its packets arrive then, and the event goes on or
        // closes (MD = 0, §4.5.6) from there.
        link.nextEvent = time + exchange
        links[linkID] = link
        return deliveries
    }

    // MARK: Loss

    /// The supervision timeout expired: both ends still on the air learn Connection Timeout
    /// (0x08, Vol 6 Part B §4.5.2).
    mutating func supervisionTimeout(_ linkID: Int) -> [Delivery] {
        guard let link = links.removeValue(forKey: linkID) else { return [] }
        var deliveries: [Delivery] = []
        for end in link.ends {
            deliveries += deliver(to: end.id) { $0.linkLost(handle: end.handle, reason: .connectionTimeout) }
        }
        return deliveries
    }

    /// Re-checks every link of `id` after a change of position, power or transmit power: a link
    /// whose ends cannot hear each other starts its supervision timeout; one back in range
    /// before it expires carries on.
    mutating func recheckLinks(of id: ControllerID, now: Duration) {
        for (linkID, link) in links where link.central.id == id || link.peripheral.id == id {
            let connected = inRange(link.central.id, link.peripheral.id, phy: link.phy)
            if !connected && link.lossDeadline == nil {
                let deadline = now + supervisionTimeout(of: link)
                links[linkID]?.lossDeadline = deadline
            } else if connected && !link.doomed && link.lossDeadline != nil {
                links[linkID]?.lossDeadline = nil
                if !link.deferred.isEmpty {
                    links[linkID]?.nextEvent = now
                } else if link.hasQueuedData {
                    let next = nextEventTime(link, after: now)
                    links[linkID]?.nextEvent = next
                }
            }
        }
    }

    /// A controller reset (by its host or by a fault) or left the medium: its side of every link
    /// is gone at once; each peer finds out when its supervision timeout expires.
    mutating func controllerVanished(_ id: ControllerID, now: Duration) -> [Delivery] {
        nextAdvertisingEvent[id] = nil
        forgetBluetooth5State(of: id)
        for (linkID, link) in links {
            for end in link.ends where end.id == id { detach(end, of: linkID, now: now) }
        }
        return []
    }

    /// Marks `end`'s side of a link as gone without a word to the peer: the link is doomed, and
    /// the peer learns of it when the supervision timeout expires. The end no longer matches
    /// its handle, which the controller may reuse at once.
    mutating func detach(_ end: LinkEnd, of linkID: Int, now: Duration) {
        guard var l = links[linkID] else { return }
        let timeout = supervisionTimeout(of: l)
        let gone = LinkEnd(id: end.id, handle: Self.detachedHandle)
        if l.central == end { l.central = gone } else if l.peripheral == end { l.peripheral = gone }
        l.doomed = true
        l.lossDeadline = l.lossDeadline ?? now + timeout
        l.queues = [:]
        l.nextEvent = nil
        links[linkID] = l
    }

    /// A handle no controller hands out (connection handles are 0x0000–0x0EFF).
    static let detachedHandle: UInt16 = 0xFFFF

    // MARK: Procedures

    mutating func applyLinkProcedure(_ action: AirAction, from id: ControllerID, now: Duration) -> [Delivery] {
        func find(_ handle: UInt16) -> (Int, LinkEnd, LinkEnd)? {
            let end = LinkEnd(id: id, handle: handle)
            guard let (linkID, _) = link(of: end), let link = links[linkID], let peer = link.other(than: end) else { return nil }
            guard link.lossDeadline == nil else {
                // Out of range: the procedure waits for contact (a doomed link never gets it).
                if !link.doomed { links[linkID]?.deferred.append((action, id)) }
                return nil
            }
            return (linkID, end, peer)
        }
        switch action {
        case let .connectionUpdate(handle, interval, latency, timeout):
            // Connection Update procedure (§5.1.1): both hosts learn the new parameters; the
            // peripheral's only when one of them changed (Vol 4 Part E §7.7.65.3).
            guard let (linkID, end, peer) = find(handle) else { return [] }
            let before = nodes[end.id.rawValue].controller.connections[end.handle]
            let changed = before.map { $0.interval != interval || $0.latency != latency || $0.supervisionTimeout != timeout } ?? true
            let central = links[linkID]?.central
            links[linkID]?.interval = Self.interval(interval)
            links[linkID]?.anchor = now
            links[linkID]?.lastEvent = nil
            links[linkID]?.eventStart = nil
            if links[linkID]?.nextEvent != nil { links[linkID]?.nextEvent = now }
            return [end, peer].filter { changed || $0 == central }.flatMap { e in
                deliver(to: e.id) { $0.connectionUpdated(handle: e.handle, interval: interval, latency: latency, supervisionTimeout: timeout) }
            }
        case let .connectionParameterRequest(handle, intervalMin, intervalMax, latency, timeout):
            guard let (linkID, end, central) = find(handle) else { return [] }
            // A central without the procedure answers LL_CONNECTION_PARAM_REQ with LL_UNKNOWN_RSP:
            // the peripheral's host hears Unsupported Remote Feature (0x1A, Vol 6 Part B §5.1.7).
            let lacksProcedure = !nodes[central.id.rawValue].controller.hasLEFeature(.connectionParametersRequest)
            if let refusal = lacksProcedure ? HCIStatus(0x1A) : nodes[central.id.rawValue].controller.configuration.refusesConnectionParameterRequests {
                return deliver(to: end.id) {
                    $0.connectionUpdated(handle: end.handle, interval: intervalMin, latency: latency, supervisionTimeout: timeout, status: refusal)
                }
            }
            links[linkID]?.pendingParameters = (intervalMin, latency, timeout)
            let asked = deliver(to: central.id) {
                $0.parameterRequest(handle: central.handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                    latency: latency, supervisionTimeout: timeout) ?? []
            }
            if !asked.isEmpty { return asked }
            // The central's host has the request masked: its controller accepts on its own.
            links[linkID]?.pendingParameters = nil
            return applyLinkProcedure(.connectionUpdate(handle: handle, interval: intervalMin, latency: latency, supervisionTimeout: timeout),
                                      from: end.id, now: now)
        case let .connectionParameterRejected(handle, reason):
            guard let (linkID, _, peripheral) = find(handle), let asked = links[linkID]?.pendingParameters else { return [] }
            links[linkID]?.pendingParameters = nil
            return deliver(to: peripheral.id) {
                $0.connectionUpdated(handle: peripheral.handle, interval: asked.interval, latency: asked.latency,
                                     supervisionTimeout: asked.timeout, status: reason)
            }
        case let .dataLengthChanged(handle):
            // Data Length Update procedure (§5.1.9): the event goes to both hosts when a value changed.
            guard let (linkID, end, peer) = find(handle), let link = links[linkID] else { return [] }
            let tx = effectiveTx(from: end)
            guard tx != link.txOctets[end] else { return [] }
            links[linkID]?.txOctets[end] = tx
            let back = link.txOctets[peer] ?? 27
            return deliver(to: end.id) { $0.dataLengthChanged(handle: end.handle, maxTxOctets: tx, maxRxOctets: back) }
                + deliver(to: peer.id) { $0.dataLengthChanged(handle: peer.handle, maxTxOctets: back, maxRxOctets: tx) }
        case let .setPHY(handle, preference):
            // PHY Update procedure (§5.1.10): LE 2M when both ends accept it both ways, else
            // LE 1M, else LE Coded (a peer with no preference takes LE Coded when it has it).
            guard let (linkID, end, peer) = find(handle), let link = links[linkID] else { return [] }
            var theirs = nodes[peer.id.rawValue].controller.defaultPHYs
            if theirs == .any, nodes[peer.id.rawValue].controller.configuration.extendedAdvertising?.codedPHY == true {
                theirs.tx.insert(.leCoded)
                theirs.rx.insert(.leCoded)
            }
            // A peer without LE 2M (a Bluetooth 4 Link Layer) stays on the PHYs it has.
            let peerPHYs = nodes[peer.id.rawValue].controller.physOnAir
            theirs.tx.formIntersection(peerPHYs)
            theirs.rx.formIntersection(peerPHYs)
            let both = preference.tx.intersection(theirs.rx).intersection(preference.rx).intersection(theirs.tx)
            let phy: LEPHY = both.contains(.le2M) ? .le2M : both.contains(.le1M) ? .le1M : both.contains(.leCoded) ? .leCoded : link.phy
            let changed = phy != link.phy
            links[linkID]?.phy = phy
            // The new PHY's reach decides whether the link holds (LE Coded's is longer).
            if changed { recheckLinks(of: end.id, now: now) }
            return deliver(to: end.id) { $0.phyUpdated(handle: end.handle, phy: phy) }
                + (changed ? deliver(to: peer.id) { $0.phyUpdated(handle: peer.handle, phy: phy) } : [])
        case let .startEncryption(handle, rand, ediv, key):
            // Encryption Start procedure (§5.1.3): the peripheral's host supplies its key.
            guard let (linkID, end, peripheral) = find(handle) else { return [] }
            links[linkID]?.pendingKey = key
            let asked = deliver(to: peripheral.id) {
                $0.longTermKeyRequested(handle: peripheral.handle, randomNumber: rand, encryptedDiversifier: ediv) ?? []
            }
            if !asked.isEmpty { return asked }
            links[linkID]?.pendingKey = nil
            return deliver(to: end.id) { $0.encryptionChanged(handle: end.handle, status: .pinOrKeyMissing) }
        case let .longTermKeyReply(handle, key):
            guard let (linkID, end, central) = find(handle), let expected = links[linkID]?.pendingKey else { return [] }
            links[linkID]?.pendingKey = nil
            guard let key else {
                // LL_REJECT_IND with PIN or Key Missing: only the central's host hears of it.
                return deliver(to: central.id) { $0.encryptionChanged(handle: central.handle, status: .pinOrKeyMissing) }
            }
            guard key == expected else {
                // Different keys: the first encrypted PDU fails its MIC and the link ends with
                // Connection Terminated due to MIC Failure (0x3D), on both sides.
                links[linkID] = nil
                return [end, central].flatMap { e in deliver(to: e.id) { $0.linkLost(handle: e.handle, reason: HCIStatus(0x3D)) } }
            }
            links[linkID]?.encrypted = true
            return [central, end].flatMap { e in deliver(to: e.id) { $0.encryptionChanged(handle: e.handle, status: .success) } }
        default:
            return []
        }
    }
}
