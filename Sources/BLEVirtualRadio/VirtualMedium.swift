import BLEHCI
import BLEWire

/// Links any number of virtual controllers: carries advertising to scanners, makes connections
/// between an initiator and a connectable advertiser, and moves ACL data and link events between
/// the two ends of a link. Sans-IO like the controllers: it takes host packets and the time, and
/// returns what each controller's host receives plus its next deadline (the next advertising
/// event). Core spec Vol 6 Part B §4 (link-layer states), seen through HCI.
///
/// Simplifications of this slice: everyone hears everyone with one fixed RSSI; a scan request
/// is answered within the same advertising event; a connection is made at the target's first
/// advertising event after LE Create Connection; air time is not modelled.
public struct VirtualMedium: Sendable {
    /// Identifies a controller on this medium.
    public struct ControllerID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static func < (a: ControllerID, b: ControllerID) -> Bool { a.rawValue < b.rawValue }
        public var description: String { "controller \(rawValue)" }
    }

    /// One packet for one controller's host.
    public struct Delivery: Hashable, Sendable {
        public var to: ControllerID
        public var packet: HostBoundPacket

        public init(to: ControllerID, packet: HostBoundPacket) {
            self.to = to
            self.packet = packet
        }
    }

    struct LinkEnd: Hashable {
        var id: ControllerID
        var handle: UInt16
    }

    struct Link: Hashable {
        var central: LinkEnd
        var peripheral: LinkEnd

        func other(than end: LinkEnd) -> LinkEnd? {
            if end == central { return peripheral }
            if end == peripheral { return central }
            return nil
        }
    }

    public private(set) var controllers: [VirtualController] = []
    /// When each advertising controller's next advertising event is due.
    var nextAdvertisingEvent: [ControllerID: Duration] = [:]
    var links: [Link] = []
    /// The RSSI every scanner reports (no distance model yet).
    public var rssi: Int8 = -50

    public init() {}

    /// Adds a controller, in standby, and returns its identifier.
    public mutating func add(_ controller: VirtualController) -> ControllerID {
        controllers.append(controller)
        return ControllerID(rawValue: controllers.count - 1)
    }

    public func controller(_ id: ControllerID) -> VirtualController? {
        controllers.indices.contains(id.rawValue) ? controllers[id.rawValue] : nil
    }

    /// The earliest time `advance(to:)` has work to do, or nil when nothing is scheduled.
    public var nextDeadline: Duration? { nextAdvertisingEvent.values.min() }

    // MARK: Input from hosts

    /// One H4 frame from the host of `id`. Frames that do not decode, and packet types a
    /// controller does not accept (events from a host), are dropped: a controller has no way to
    /// answer a packet it cannot parse (Vol 4 Part E §5.4).
    public mutating func receive(_ frame: H4Frame, from id: ControllerID, now: Duration) -> [Delivery] {
        guard controllers.indices.contains(id.rawValue) else { return [] }
        switch frame.type {
        case .command:
            guard let command = try? HCICommand.decode(frame.payload) else { return [] }
            return receive(command, from: id, now: now)
        case .acl:
            guard let packet = try? ACLPacket.decode(frame.payload) else { return [] }
            let out = controllers[id.rawValue].receiveFromHost(packet)
            return apply(out, from: id, now: now)
        default:
            return []
        }
    }

    /// One decoded command from the host of `id`.
    public mutating func receive(_ command: HCICommand, from id: ControllerID, now: Duration) -> [Delivery] {
        guard controllers.indices.contains(id.rawValue) else { return [] }
        let out = controllers[id.rawValue].handle(command)
        return apply(out, from: id, now: now)
    }

    private mutating func apply(_ out: ControllerOutput, from id: ControllerID, now: Duration) -> [Delivery] {
        var deliveries = out.toHost.map { Delivery(to: id, packet: $0) }
        for action in out.air {
            switch action {
            case .advertisingChanged:
                if controllers[id.rawValue].advertisement == nil {
                    nextAdvertisingEvent[id] = nil
                } else if nextAdvertisingEvent[id] == nil {
                    // The first advertising event follows the enable at once (Vol 6 Part B §4.4.2.2).
                    nextAdvertisingEvent[id] = now
                }
            case .initiate, .cancelInitiation:
                // The initiator's state lives in the controller; connections are made at the
                // target's advertising events.
                break
            case let .acl(handle, packet):
                guard let peer = peer(of: LinkEnd(id: id, handle: handle)) else { break }
                deliveries += controllers[peer.id.rawValue].deliverFromPeer(handle: peer.handle, packet: packet)
                    .map { Delivery(to: peer.id, packet: $0) }
            case let .disconnect(handle, reason):
                guard let peer = removeLink(LinkEnd(id: id, handle: handle)) else { break }
                deliveries += controllers[peer.id.rawValue].linkLost(handle: peer.handle, reason: reason)
                    .map { Delivery(to: peer.id, packet: $0) }
            case let .connectionUpdate(handle, interval, latency, timeout):
                let end = LinkEnd(id: id, handle: handle)
                for e in [end] + (peer(of: end).map { [$0] } ?? []) {
                    deliveries += controllers[e.id.rawValue].connectionUpdated(
                        handle: e.handle, interval: interval, latency: latency, supervisionTimeout: timeout)
                        .map { Delivery(to: e.id, packet: $0) }
                }
            case .reset:
                nextAdvertisingEvent[id] = nil
                // The reset controller's links vanish; each peer sees its supervision timeout
                // expire (Connection Timeout, 0x08; Vol 6 Part B §4.5.2).
                for link in links where link.central.id == id || link.peripheral.id == id {
                    let peer = link.central.id == id ? link.peripheral : link.central
                    deliveries += controllers[peer.id.rawValue].linkLost(handle: peer.handle, reason: .connectionTimeout)
                        .map { Delivery(to: peer.id, packet: $0) }
                }
                links.removeAll { $0.central.id == id || $0.peripheral.id == id }
            }
        }
        return deliveries
    }

    private func peer(of end: LinkEnd) -> LinkEnd? {
        for link in links { if let other = link.other(than: end) { return other } }
        return nil
    }

    private mutating func removeLink(_ end: LinkEnd) -> LinkEnd? {
        guard let index = links.firstIndex(where: { $0.other(than: end) != nil }) else { return nil }
        let other = links[index].other(than: end)
        links.remove(at: index)
        return other
    }

    // MARK: Time

    /// Runs every advertising event due at or before `now`, in time order.
    public mutating func advance(to now: Duration) -> [Delivery] {
        var deliveries: [Delivery] = []
        while let (id, due) = nextAdvertisingEvent.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), due <= now {
            guard let adv = controllers[id.rawValue].advertisement else {
                nextAdvertisingEvent[id] = nil
                continue
            }
            // A late driver (a sleep that overslept) skips missed events rather than bursting.
            let next = due + adv.interval
            nextAdvertisingEvent[id] = next > now ? next : now + adv.interval
            deliveries += advertisingEvent(from: id, adv)
        }
        return deliveries
    }

    /// One advertising event (Vol 6 Part B §4.4.2): an initiator waiting for this advertiser
    /// connects (a CONNECT_IND ends the event), otherwise every scanner hears it.
    private mutating func advertisingEvent(from id: ControllerID, _ adv: VirtualAdvertisement) -> [Delivery] {
        if let initiator = controllers.indices.first(where: { $0 != id.rawValue && controllers[$0].isInitiating(to: adv) }),
           let request = controllers[initiator].initiation {
            let central = ControllerID(rawValue: initiator)
            let c = controllers[initiator].connected(role: .central, peer: adv.address, interval: request.interval,
                                                     latency: request.latency, supervisionTimeout: request.supervisionTimeout)
            let p = controllers[id.rawValue].connected(role: .peripheral, peer: request.ownAddress, interval: request.interval,
                                                       latency: request.latency, supervisionTimeout: request.supervisionTimeout)
            nextAdvertisingEvent[id] = nil
            links.append(Link(central: LinkEnd(id: central, handle: c.handle), peripheral: LinkEnd(id: id, handle: p.handle)))
            return c.toHost.map { Delivery(to: central, packet: $0) } + p.toHost.map { Delivery(to: id, packet: $0) }
        }
        var deliveries: [Delivery] = []
        for index in controllers.indices where index != id.rawValue {
            deliveries += controllers[index].hear(adv, rssi: rssi).map { Delivery(to: ControllerID(rawValue: index), packet: $0) }
        }
        return deliveries
    }
}
