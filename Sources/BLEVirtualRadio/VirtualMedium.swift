import BLEHCI
import BLEWire

/// Links any number of virtual controllers: carries advertising to the scanners in range, makes
/// connections between an initiator and a connectable advertiser, moves ACL data over each link
/// in connection events timed by the air-time model, runs the link procedures that involve both
/// ends (parameters, data length, PHY, encryption), and ends links whose peer has gone out of
/// range or off after the supervision timeout. Sans-IO like the controllers: it takes host
/// packets and the time, and returns what each controller's host receives plus its next
/// deadline. Core spec Vol 6 Part B §4 (link-layer states), seen through HCI.
///
/// Simplifications: a scan request is answered within the same advertising event; a connection
/// is made at the target's first advertising event after LE Create Connection; link procedures
/// (other than data transfer) complete at once rather than at an instant; both directions of a
/// link use one PHY.
public struct VirtualMedium: Sendable {
    /// Identifies a controller on this medium.
    public struct ControllerID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static func < (a: ControllerID, b: ControllerID) -> Bool { a.rawValue < b.rawValue }
        public var description: String { "controller \(rawValue)" }
    }

    /// One packet for one controller's host. Two deliveries are equal when they go to the same
    /// host with the same packet, however each holds it.
    public struct Delivery: Hashable, Sendable {
        public var to: ControllerID
        /// The packet. A delivery the medium passed through holds the encoded ACL packet, and
        /// decodes it here (ACL data is only encoded again on its way to the host).
        public var packet: HostBoundPacket {
            get {
                switch content {
                case let .packet(p): return p
                case let .encodedACL(frame): return .acl(Self.decoded(frame.payload))
                case let .completedPackets(entry): return .event(.numberOfCompletedPackets([entry]))
                }
            }
            set { content = .packet(newValue) }
        }
        private var content: Content

        /// How a delivery holds its packet: decoded, or an ACL packet already in the bytes its
        /// host receives (`VirtualController.passThrough`).
        private enum Content: Sendable {
            case packet(HostBoundPacket)
            case encodedACL(H4Frame)
            /// A Number Of Completed Packets event with this one entry (§7.7.19), encoded as
            /// it goes out without an entry array (`CompletedPacketsTally`).
            case completedPackets(CompletedPackets)
        }

        public init(to: ControllerID, packet: HostBoundPacket) {
            self.to = to
            self.content = .packet(packet)
        }

        /// An ACL packet for `to`'s host, already encoded: `frame` is what the transport carries.
        /// Its header must have been checked (`VirtualMedium.ACLHeader`).
        init(to: ControllerID, encodedACL frame: H4Frame) {
            self.to = to
            self.content = .encodedACL(frame)
        }

        /// A Number Of Completed Packets event for `to`'s host with the one entry `entry`.
        init(to: ControllerID, completedPackets entry: CompletedPackets) {
            self.to = to
            self.content = .completedPackets(entry)
        }

        /// The frame the host's transport carries (H4 indicator and packet).
        var h4Frame: H4Frame {
            switch content {
            case let .packet(p): return p.h4Frame
            case let .encodedACL(frame): return frame
            case let .completedPackets(entry): return H4Frame(type: .event, payload: HCIEvent.encodeCompletedPackets(entry))
            }
        }

        /// Whether this is a Number Of Completed Packets event (Vol 4 Part E §7.7.19), asked
        /// of every delivery of a batch without decoding the ACL packets among them.
        var isCompletedPackets: Bool {
            switch content {
            case .packet(.event(.numberOfCompletedPackets)), .completedPackets: return true
            default: return false
            }
        }

        /// An encoded ACL packet whose header was checked when it was made; an empty packet on
        /// handle 0 only if that check was skipped (never: `init(to:encodedACL:)` requires it).
        private static func decoded(_ payload: [UInt8]) -> ACLPacket {
            (try? ACLPacket.decode(payload)) ?? ACLPacket(handle: 0, boundary: .continuing, data: [])
        }

        public static func == (a: Delivery, b: Delivery) -> Bool { a.to == b.to && a.packet == b.packet }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(to)
            hasher.combine(packet)
        }
    }

    /// Where a controller is, in metres on a plane.
    public struct Position: Hashable, Sendable {
        public var x: Double
        public var y: Double
        public init(x: Double, y: Double) {
            self.x = x
            self.y = y
        }
        public static let origin = Position(x: 0, y: 0)
    }

    /// A controller and what the medium knows of it beyond its HCI state.
    struct Node: Sendable {
        var controller: VirtualController
        var position: Position = .origin
        var poweredOn = true
        /// False once removed: the node is gone from the air for good.
        var attached = true
        var onAir: Bool { poweredOn && attached }
    }

    var nodes: [Node] = []
    /// When each advertising controller's next advertising event is due, and since when it
    /// advertises (high duty cycle directed advertising ends after 1.28 s).
    var nextAdvertisingEvent: [ControllerID: Duration] = [:]
    var advertisingSince: [ControllerID: Duration] = [:]
    var links: [Int: Link] = [:]
    var nextLinkID = 0
    /// Bluetooth 5 advertising (VirtualMedium+ExtendedAdvertising.swift): when each set's and
    /// each periodic train's next event is due, since when each set advertises, when each sync
    /// is lost without its train, when each extended scan ends, reports in flight, and the
    /// auxiliary PDU each advertiser's chains lose (a fault).
    var nextSetEvent: [SetKey: Duration] = [:]
    var setSince: [SetKey: Duration] = [:]
    /// The set's enable count (`AdvertisingSetState.enables`) when `setSince` was taken.
    var setEnables: [SetKey: Int] = [:]
    var nextPeriodicEvent: [SetKey: Duration] = [:]
    var syncLossDeadlines: [SyncKey: Duration] = [:]
    var scanEnds: [ControllerID: Duration] = [:]
    var pendingReceptions: [PendingReception] = []
    var chainLoss: [ControllerID: Int] = [:]
    /// Advertisers whose scan responses go wrong (fault injection, VirtualMedium+ScanResponseFaults),
    /// and where each scanner is with each of them.
    var scanResponseFaults: [ControllerID: ScanResponseFault] = [:]
    var scanResponseFaultStates: [ScanResponseFaultPair: ScanResponseFaultState] = [:]
    /// Signal propagation: path loss and receiver sensitivity. Changing it re-checks every link
    /// (as of the latest time the medium has seen).
    public var propagation = Propagation() {
        didSet {
            for id in nodes.indices { recheckLinks(of: ControllerID(rawValue: id), now: latest) }
        }
    }
    /// The latest time the medium was given.
    var latest: Duration = .zero
    /// With the air-time model on, ACL data waits for connection events and each event carries
    /// only what fits (AirTime.swift). Off, data crosses at once: the raw host cost.
    public var airTimeModel = true

    public init() {}

    public var controllers: [VirtualController] { nodes.map(\.controller) }

    /// Adds a controller, in standby at the origin, and returns its identifier.
    public mutating func add(_ controller: VirtualController) -> ControllerID {
        nodes.append(Node(controller: controller))
        return ControllerID(rawValue: nodes.count - 1)
    }

    public func controller(_ id: ControllerID) -> VirtualController? {
        nodes.indices.contains(id.rawValue) ? nodes[id.rawValue].controller : nil
    }

    func exists(_ id: ControllerID) -> Bool { nodes.indices.contains(id.rawValue) }

    /// The earliest time `advance(to:)` has work to do, or nil when nothing is scheduled.
    public var nextDeadline: Duration? {
        // Asked at least twice per batch of host frames: no arrays made, no link copied out.
        var next: Duration?
        for t in nextAdvertisingEvent.values { next = next.map { min($0, t) } ?? t }
        var i = links.values.startIndex
        while i != links.values.endIndex {
            if let t = links.values[i].nextEvent { next = next.map { min($0, t) } ?? t }
            if let t = links.values[i].lossDeadline { next = next.map { min($0, t) } ?? t }
            links.values.formIndex(after: &i)
        }
        if let t = extendedDeadline { next = next.map { min($0, t) } ?? t }
        return next
    }

    /// `nextDeadline` as the last `advance(to:)` left it, without asking again: what the radio
    /// arms its timer with after a batch that changed nothing since (ACL data without the
    /// air-time model, `mayScheduleWork`). Any other change makes it stale.
    private(set) var deadlineAfterAdvance: Duration?

    /// `nextDeadline` for the radio's timer, asked after every batch of host frames: `mutating`
    /// only so that the radio asks the medium where it lies (the getter, called on the actor's
    /// stored medium, copied the whole medium first).
    mutating func nextDeadlineInPlace() -> Duration? { nextDeadline }

    // MARK: Input from hosts

    /// Whether taking `frame` from a host can make work due that `advance(to:)` must run: any
    /// command can (an advertising enable, a connection attempt, a link procedure), and ACL data
    /// can with the air-time model (it waits for a connection event). Without it, ACL data
    /// crosses at once in `forward` and leaves every deadline as it was. Static, given the
    /// medium's `airTimeModel`: a method called on the radio's stored medium copied it whole.
    static func mayScheduleWork(_ frame: H4Frame, airTimeModel: Bool) -> Bool {
        frame.type != .acl || airTimeModel
    }

    /// One H4 frame from the host of `id`. Frames that do not decode, and packet types a
    /// controller does not accept (events from a host), are dropped: a controller has no way to
    /// answer a packet it cannot parse (Vol 4 Part E §5.4). A controller that is off or removed
    /// hears nothing from its host.
    public mutating func receive(_ frame: H4Frame, from id: ControllerID, now: Duration) -> [Delivery] {
        var deliveries: [Delivery] = []
        var credits = CompletedPacketsTally()
        receive(frame, from: id, now: now, into: &deliveries, credits: &credits)
        credits.write(into: &deliveries)
        return deliveries
    }

    /// `receive(_:from:now:)` appending to `deliveries`, the batch the radio is building: an
    /// ACL packet without the air-time model goes through `forward(_:from:into:credits:)`, with
    /// no array of its own; the caller writes `credits` into the batch before it goes out.
    mutating func receive(_ frame: consuming H4Frame, from id: ControllerID, now: Duration, into deliveries: inout [Delivery],
                          credits: inout CompletedPacketsTally) {
        if frame.type == .acl, !airTimeModel {
            latest = max(latest, now)
            // What `ACLPacket.decode` accepts, checked in place: the packet is passed on without
            // being decoded (`VirtualController.passThrough`), in its own bytes when the
            // caller gave up its reference.
            guard exists(id), nodes[id.rawValue].onAir, let header = ACLHeader(frame.payload) else { return }
            forward(consume frame, header, from: id, into: &deliveries, credits: &credits)
            return
        }
        credits.route = nil
        deliveries += receiveOther(frame, from: id, now: now)
    }

    private mutating func receiveOther(_ frame: H4Frame, from id: ControllerID, now: Duration) -> [Delivery] {
        latest = max(latest, now)
        guard exists(id), nodes[id.rawValue].onAir else { return [] }
        switch frame.type {
        case .command:
            guard let command = try? HCICommand.decode(frame.payload) else { return [] }
            return receive(command, from: id, now: now)
        case .acl:
            guard let packet = try? ACLPacket.decode(frame.payload) else { return [] }
            if !airTimeModel { return forward(packet, from: id) }
            let out = nodes[id.rawValue].controller.receiveFromHost(packet, creditAtOnce: !airTimeModel)
            return apply(out, from: id, now: now)
        default:
            return []
        }
    }

    /// One decoded command from the host of `id`.
    public mutating func receive(_ command: HCICommand, from id: ControllerID, now: Duration) -> [Delivery] {
        latest = max(latest, now)
        guard exists(id), nodes[id.rawValue].onAir else { return [] }
        if command.opcode == .readRSSI { return readRSSI(command, from: id, now: now) }
        let out = nodes[id.rawValue].controller.handle(command)
        return apply(out, from: id, now: now)
    }

    mutating func apply(_ out: ControllerOutput, from id: ControllerID, now: Duration) -> [Delivery] {
        var deliveries = out.toHost.map { Delivery(to: id, packet: $0) }
        for action in out.air {
            switch action {
            case .advertisingChanged:
                if nodes[id.rawValue].controller.advertisement == nil {
                    nextAdvertisingEvent[id] = nil
                } else if nextAdvertisingEvent[id] == nil {
                    // The first advertising event follows the enable at once (Vol 6 Part B §4.4.2.2).
                    nextAdvertisingEvent[id] = now
                    advertisingSince[id] = now
                }
                refreshSets(of: id, now: now)
            case .scanningChanged:
                refreshScan(of: id, now: now)
            case let .syncTransfer(handle, serviceData, source):
                deliveries += transferSync(from: LinkEnd(id: id, handle: handle), serviceData: serviceData, source, now: now)
            case .initiate, .cancelInitiation:
                // The initiator's state lives in the controller; connections are made at the
                // target's advertising events.
                break
            case let .acl(handle, packet):
                deliveries += send(packet, from: LinkEnd(id: id, handle: handle), now: now)
            case let .disconnect(handle, reason):
                // LL_TERMINATE_IND reaches the peer (Vol 6 Part B §5.1.6).
                // A peer out of range never hears it and times out instead.
                guard let (linkID, end) = link(of: LinkEnd(id: id, handle: handle)), let l = links[linkID] else { break }
                guard l.lossDeadline == nil, let peer = l.other(than: end) else {
                    detach(end, of: linkID, now: now)
                    break
                }
                links[linkID] = nil
                deliveries += deliver(to: peer.id) { $0.linkLost(handle: peer.handle, reason: reason) }
            case .reset:
                deliveries += controllerVanished(id, now: now)
            default:
                deliveries += applyLinkProcedure(action, from: id, now: now)
            }
        }
        return deliveries
    }

    /// Runs `body` on controller `id` and wraps what it returns as deliveries to its host.
    mutating func deliver(to id: ControllerID, _ body: (inout VirtualController) -> [HostBoundPacket]) -> [Delivery] {
        guard exists(id), nodes[id.rawValue].onAir else { return [] }
        return body(&nodes[id.rawValue].controller).map { Delivery(to: id, packet: $0) }
    }

    // MARK: Time

    /// Runs everything due at or before `now`, in time order: advertising events, connection
    /// events, supervision timeouts.
    public mutating func advance(to now: Duration) -> [Delivery] {
        latest = max(latest, now)
        var deliveries: [Delivery] = []
        var next = nextDeadline
        defer { deadlineAfterAdvance = next }
        while let due = next, due <= now {
            // After each step, whichever way it ends.
            defer { next = nextDeadline }
            if let extended = runExtended(due: due, now: now) {
                deliveries += extended
            } else if let (id, time) = nextAdvertisingEvent.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), time == due {
                guard let adv = nodes[id.rawValue].controller.advertisement, nodes[id.rawValue].onAir else {
                    nextAdvertisingEvent[id] = nil
                    continue
                }
                if adv.type == .connectableDirectedHighDuty, time - (advertisingSince[id] ?? time) >= .milliseconds(1280) {
                    // §7.8.9: high duty cycle directed advertising stops after 1.28 s with an
                    // LE Connection Complete carrying Advertising Timeout (0x3C).
                    nextAdvertisingEvent[id] = nil
                    deliveries += deliver(to: id) { $0.directedAdvertisingTimedOut() }
                    continue
                }
                // A late driver (a sleep that overslept) skips missed events rather than bursting.
                let next = time + adv.interval
                nextAdvertisingEvent[id] = next > now ? next : now + adv.interval
                deliveries += advertisingEvent(from: id, adv, now: time)
            } else if let (linkID, link) = links.min(by: { ($0.value.lossDeadline ?? .seconds(Int64.max), $0.key) < ($1.value.lossDeadline ?? .seconds(Int64.max), $1.key) }),
                      link.lossDeadline == due {
                deliveries += supervisionTimeout(linkID)
            } else if let (linkID, _) = links.min(by: { ($0.value.nextEvent ?? .seconds(Int64.max), $0.key) < ($1.value.nextEvent ?? .seconds(Int64.max), $1.key) }) {
                deliveries += connectionEvent(linkID, at: due)
            } else {
                break
            }
        }
        return deliveries
    }

    /// One advertising event (Vol 6 Part B §4.4.2): an initiator in range waiting for this
    /// advertiser connects (a CONNECT_IND ends the event), otherwise every scanner in range
    /// hears it, with an RSSI from distance and transmit power.
    mutating func advertisingEvent(from id: ControllerID, _ adv: VirtualAdvertisement, now: Duration) -> [Delivery] {
        let reach = adv.weakestPHY
        if let initiator = nodes.indices.first(where: {
                $0 != id.rawValue && nodes[$0].onAir && inRange(ControllerID(rawValue: $0), id, phy: reach) && nodes[$0].controller.isInitiating(to: adv)
                && nodes[$0].controller.hasRoomForLink
           }),
           nodes[id.rawValue].controller.hasRoomForLink,
           let request = nodes[initiator].controller.initiation {
            return connect(ControllerID(rawValue: initiator), request, to: id, adv, now: now)
        }
        var deliveries: [Delivery] = []
        for index in nodes.indices where index != id.rawValue && nodes[index].onAir {
            let listener = ControllerID(rawValue: index)
            guard let rssi = rssi(from: id, to: listener, phy: reach) else { continue }
            if adv.extended != nil {
                extendedHearing(of: adv, from: id, by: listener, rssi: rssi, at: now)
                heardSyncInfo(in: adv, from: id, listener: listener, at: now)
                continue
            }
            var heard = nodes[index].controller.hear(adv, rssi: rssi)
            if let fault = scanResponseFaults[id] { heard = applyScanResponseFault(fault, from: id, to: listener, heard) }
            deliveries += heard.map { Delivery(to: listener, packet: $0) }
        }
        return deliveries
    }

    /// A CONNECT_IND (or, to an extended advertiser, AUX_CONNECT_REQ on its secondary PHY,
    /// answered by AUX_CONNECT_RSP; Vol 6 Part B §4.4.2.2) ends the advertising event: the
    /// link starts on that PHY with the initiator's parameters for it (§7.8.66), using Channel
    /// Selection Algorithm #2 when both ends have it (always after AUX_CONNECT_REQ).
    private mutating func connect(_ central: ControllerID, _ request: VirtualController.Initiation, to id: ControllerID,
                                  _ adv: VirtualAdvertisement, now: Duration) -> [Delivery] {
        let phy = adv.extended?.secondaryPHY ?? .le1M
        let p = request.parametersByPHY[phy] ?? VirtualController.ConnectionParameters(
            interval: request.interval, latency: request.latency, supervisionTimeout: request.supervisionTimeout)
        // Two Bluetooth 5 controllers agree on #2 through the ChSel bits (Vol 6 Part B §2.3.3.1).
        let csa2 = adv.extended != nil || (nodes[central.rawValue].controller.configuration.extendedAdvertising != nil
                                           && nodes[id.rawValue].controller.configuration.extendedAdvertising != nil)
        let c = nodes[central.rawValue].controller.connected(role: .central, peer: adv.address, interval: p.interval,
                                                             latency: p.latency, supervisionTimeout: p.supervisionTimeout,
                                                             phy: phy, channelSelection2: csa2)
        let pe = nodes[id.rawValue].controller.connected(role: .peripheral, peer: request.ownAddress, interval: p.interval,
                                                         latency: p.latency, supervisionTimeout: p.supervisionTimeout,
                                                         phy: phy, setHandle: adv.setHandle, channelSelection2: csa2)
        if let handle = adv.setHandle {
            nextSetEvent[SetKey(id: id, handle: handle)] = nil
            setSince[SetKey(id: id, handle: handle)] = nil
        } else {
            nextAdvertisingEvent[id] = nil
        }
        let cEnd = LinkEnd(id: central, handle: c.handle)
        let pEnd = LinkEnd(id: id, handle: pe.handle)
        var link = Link(central: cEnd, peripheral: pEnd, anchor: now, interval: Self.interval(p.interval))
        link.phy = phy
        link.txOctets = [cEnd: effectiveTx(from: cEnd), pEnd: effectiveTx(from: pEnd)]
        links[nextLinkID] = link
        nextLinkID += 1
        return c.toHost.map { Delivery(to: central, packet: $0) } + pe.toHost.map { Delivery(to: id, packet: $0) }
    }

    /// A connection interval in 1.25 ms units as a duration.
    static func interval(_ units: UInt16) -> Duration { .microseconds(1250 * Int64(max(units, 1))) }
}
