#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLEHCI
import BLEWire

/// Who hears whom: received signal strength from distance and transmit power, a receiver
/// sensitivity below which nothing is heard, and the faults that change it (moving a device,
/// powering it off, resetting it, removing it).
extension VirtualMedium {
    /// Log-distance path loss: RSSI = TX power − (loss at 1 m + 10 · n · log10(d / 1 m)), with
    /// distances under 1 m counted as 1 m. Defaults: 40 dB at 1 m (free space at 2.4 GHz),
    /// exponent 2 (free space), sensitivity −95 dBm (typical LE 1M receivers; the spec's
    /// minimum is −70 dBm, Vol 6 Part A §4.1). The LE Coded PHY's S=8 coding reaches further:
    /// `codedSensitivity` −103 dBm, 8 dB below LE 1M, as typical receivers list (the spec's
    /// minimum for S=8 is −82 dBm, Vol 6 Part A §4.1).
    public struct Propagation: Hashable, Sendable {
        public var lossAtOneMetre: Double = 40
        public var exponent: Double = 2
        public var sensitivity: Int = -95
        public var codedSensitivity: Int = -103

        /// The weakest signal a receiver on `phy` hears.
        public func sensitivity(on phy: LEPHY) -> Int { phy == .leCoded ? codedSensitivity : sensitivity }

        public init() {}

        public func rssi(txPower: Int8, distance: Double) -> Int {
            let d = max(distance, 1)
            let loss = lossAtOneMetre + 10 * exponent * log10(d)
            return Int((Double(txPower) - loss).rounded())
        }
    }

    func distance(_ a: ControllerID, _ b: ControllerID) -> Double {
        let p = nodes[a.rawValue].position, q = nodes[b.rawValue].position
        return ((p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y)).squareRoot()
    }

    /// What `listener` measures of `sender`, or nil when it cannot hear it at all.
    /// On LE Coded (`phy`) the reach is longer (`Propagation.codedSensitivity`).
    public func rssi(from sender: ControllerID, to listener: ControllerID, phy: LEPHY = .le1M) -> Int8? {
        guard exists(sender), exists(listener), nodes[sender.rawValue].onAir, nodes[listener.rawValue].onAir else { return nil }
        let value = propagation.rssi(txPower: nodes[sender.rawValue].controller.txPower, distance: distance(sender, listener))
        guard value >= propagation.sensitivity(on: phy) else { return nil }
        return Int8(clamping: value)
    }

    /// Whether two controllers hear each other both ways on `phy` (what a link needs).
    func inRange(_ a: ControllerID, _ b: ControllerID, phy: LEPHY = .le1M) -> Bool {
        rssi(from: a, to: b, phy: phy) != nil && rssi(from: b, to: a, phy: phy) != nil
    }

    // MARK: Faults and placement

    /// Moves a controller. Links that lose contact end after their supervision timeout unless
    /// the devices come back in range first; scanners stop hearing an advertiser out of range.
    public mutating func move(_ id: ControllerID, to position: Position, now: Duration) {
        guard exists(id) else { return }
        nodes[id.rawValue].position = position
        recheckLinks(of: id, now: now)
    }

    public func position(of id: ControllerID) -> Position? { exists(id) ? nodes[id.rawValue].position : nil }

    /// Sets the transmit power a controller's signal leaves with (dBm).
    public mutating func setTxPower(_ id: ControllerID, _ dBm: Int8, now: Duration) {
        guard exists(id) else { return }
        nodes[id.rawValue].controller.txPower = dBm
        recheckLinks(of: id, now: now)
    }

    /// Powers a controller off (it vanishes from the air and ignores its host; its peers' links
    /// time out) or on again (in its reset state, as after power-up: the host must initialise
    /// it again).
    public mutating func setPower(_ id: ControllerID, on: Bool, now: Duration) -> [Delivery] {
        guard exists(id), nodes[id.rawValue].poweredOn != on else { return [] }
        if on {
            nodes[id.rawValue].controller.poweredOn()
            nodes[id.rawValue].poweredOn = true
            return []
        }
        let gone = controllerVanished(id, now: now)
        nodes[id.rawValue].poweredOn = false
        return gone
    }

    /// The controller resets itself (a firmware fault): its state returns to reset defaults, its
    /// links vanish (peers time out), and its host is told with a Hardware Error event
    /// (Vol 4 Part E §7.7.16).
    public mutating func resetController(_ id: ControllerID, now: Duration) -> [Delivery] {
        guard exists(id), nodes[id.rawValue].onAir else { return [] }
        let gone = controllerVanished(id, now: now)
        nodes[id.rawValue].controller.resetState()
        return gone + [Delivery(to: id, packet: .event(.hardwareError(code: 0x00)))]
    }

    /// Drops the link `handle` of controller `id` as if the radio contact were lost: no more data
    /// crosses, and both ends learn Connection Timeout when the supervision timeout expires.
    /// Returns false when there is no such link.
    @discardableResult
    public mutating func dropLink(_ id: ControllerID, handle: UInt16, now: Duration) -> Bool {
        guard let (linkID, _) = link(of: LinkEnd(id: id, handle: handle)), let link = links[linkID] else { return false }
        links[linkID]?.doomed = true
        links[linkID]?.queues = [:]
        links[linkID]?.nextEvent = nil
        if link.lossDeadline == nil {
            let deadline = now + supervisionTimeout(of: link)
            links[linkID]?.lossDeadline = deadline
        }
        return true
    }

    /// Removes a controller for good (a `ble radio` host that left): as a power-off that never
    /// comes back.
    public mutating func remove(_ id: ControllerID, now: Duration) {
        guard exists(id) else { return }
        _ = setPower(id, on: false, now: now)
        nodes[id.rawValue].attached = false
    }

    /// Handles of the links a controller currently has (for fault injection by the API).
    public func linkHandles(of id: ControllerID) -> [UInt16] {
        links.values.flatMap { l in l.ends.filter { $0.id == id && $0.handle != Self.detachedHandle }.map(\.handle) }.sorted()
    }
}
