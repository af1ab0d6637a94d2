import BLEWire

/// What `ble ui --broker` knows of a building: every gateway publishing under one topic prefix,
/// every device they hear with each gateway's latest RSSI, and the newest heart-rate and
/// accelerometer values of each device, all from the gateways' topics (docs/GATEWAY.md).
/// Sans-IO: `receive` takes one MQTT message (topic and payload) and says what changed; nothing
/// here reads a clock or a socket.
///
/// Bounded whatever the broker sends: a payload over `Limits.maximumPayload` is refused unread,
/// and past `Limits.gateways` gateways, `Limits.devices` devices or `Limits.valueDevices` devices
/// with values the one heard from least recently is forgotten (a gateway with its sightings).
/// A message that does not parse is counted and said (`ignored`, `lastIgnored`), and changes
/// nothing.
public struct UIBrokerModel: Sendable {
    /// The bounds on what is kept.
    public struct Limits: Sendable {
        /// The largest payload read, in octets (a gateway's advertisement is well under 2 KiB).
        public var maximumPayload = 16 * 1024
        /// Gateways kept.
        public var gateways = 64
        /// Devices kept.
        public var devices = 1000
        /// Devices whose values (and their histories) are kept.
        public var valueDevices = 32
        /// Heart-rate measurements kept per device: five minutes at 1 Hz.
        public var heartRateHistory = 300
        /// Accelerometer samples kept per device: a minute at 5 Hz.
        public var accelerationHistory = 300

        /// The defaults.
        public init() {}
    }

    /// One gateway: its `status` (`online` true, `offline` false, not yet seen nil) and the
    /// summary of its latest `status/stats`.
    public struct Gateway: Sendable {
        /// Its topic level, `NAME` of `P/NAME/…`.
        public var name: String
        /// `status`: online true, offline false, not yet seen nil.
        public var online: Bool?
        /// The counts of its latest `status/stats` (`UIBrokerPayloads.statistics`).
        public var statistics: [(String, Int)]?
        /// The model's message count when it was last heard from.
        var lastHeard: UInt64
    }

    /// One gateway's latest report of a device.
    public struct Sighting: Sendable, Equatable {
        /// dBm, when the gateway's advertisement said.
        public var rssi: Int?
        /// Unix milliseconds, as the gateway stamped it.
        public var time: Int?
    }

    /// One device, by its address: what the advertisements said and who heard it how well.
    public struct Device: Sendable {
        /// `XX:XX:XX:XX:XX:XX`, upper case.
        public var address: String
        /// `public` or `random`, as the advertisements said (public until one says).
        public var addressType: String
        /// The advertised name, cut to `UIBrokerPayloads.maximumNameLength`.
        public var name: String?
        /// Whether it advertises as connectable, when said.
        public var connectable: Bool?
        /// The advertised service UUIDs as `ble` prints them.
        public var serviceUUIDs: [String]
        /// Every gateway's latest report, by gateway name.
        public var sightings: [String: Sighting]
        /// The model's message count when it was last reported.
        var lastHeard: UInt64
    }

    /// One heart-rate measurement as a gateway decoded it.
    public struct HeartRate: Sendable, Equatable {
        /// Beats per minute.
        public var bpm: Int
        /// Sensor contact: detected, not detected, or nil when the sensor does not say.
        public var contact: Bool?
        /// Energy expended (kJ), when the sensor sends it.
        public var energyKJ: Int?
        /// RR intervals in seconds.
        public var rrIntervals: [Double]
        /// The gateway that published it.
        public var gateway: String
        /// Unix milliseconds.
        public var time: Int
    }

    /// One accelerometer sample (g).
    public struct Acceleration: Sendable, Equatable {
        /// x (g).
        public var x: Double
        /// y (g).
        public var y: Double
        /// z (g).
        public var z: Double
        /// The gateway that published it.
        public var gateway: String
        /// Unix milliseconds.
        public var time: Int
    }

    /// A device's values: the newest ones, and how many arrived.
    struct Values: Sendable {
        /// The newest measurements, at most `Limits.heartRateHistory`, oldest first.
        var heartRates: [HeartRate] = []
        /// The newest samples, at most `Limits.accelerationHistory`, oldest first.
        var accelerations: [Acceleration] = []
        /// Samples received in all, kept or not.
        var accelerationCount = 0
        /// The model's message count when a value last arrived.
        var lastHeard: UInt64
    }

    /// What one message changed.
    public enum Update: Sendable, Equatable {
        /// A gateway's status or statistics (its name).
        case gateway(String)
        /// A device's sightings (its address); also when it went from the list.
        case device(String)
        /// A heart-rate measurement of this device.
        case heartRate(address: String, HeartRate)
        /// An accelerometer sample of this device.
        case acceleration(address: String, Acceleration)
        /// A well-formed message that changes nothing shown (another characteristic's value).
        case unchanged
        /// A message refused, and why (also counted in `ignored`).
        case ignored(String)
    }

    /// The topic prefix the gateways publish under (`ble`, or `home/ble`).
    public let prefix: String
    /// What is kept at most.
    public let limits: Limits
    /// The gateways by name.
    private(set) var gatewayTable: [String: Gateway] = [:]
    /// The devices by canonical address.
    private(set) var deviceTable: [String: Device] = [:]
    /// The devices' values by canonical address.
    private(set) var valueTable: [String: Values] = [:]
    /// Counts messages, so "least recently heard" needs no clock.
    private var sequence: UInt64 = 0
    /// Messages refused since the start.
    public private(set) var ignored = 0
    /// Why the latest refused message was refused.
    public private(set) var lastIgnored: String?

    /// An empty model of the gateways under `prefix`.
    public init(prefix: String, limits: Limits = Limits()) {
        self.prefix = prefix
        self.limits = limits
    }

    // MARK: Reading

    /// The gateways, by name.
    public var gateways: [Gateway] { gatewayTable.values.sorted { $0.name < $1.name } }

    /// The devices, the strongest signal first (equal ones by address).
    public var devices: [Device] {
        deviceTable.values.map { ($0, bestRSSI($0)) }.sorted { a, b in
            a.1 != b.1 ? a.1 > b.1 : a.0.address < b.0.address
        }.map(\.0)
    }

    /// The device at `address` (any spelling `BDAddress` reads), or nil.
    public func device(_ address: String) -> Device? { Self.key(address).flatMap { deviceTable[$0] } }

    /// The gateway named `name`, or nil.
    public func gateway(_ name: String) -> Gateway? { gatewayTable[name] }

    /// The gateway to send a device's commands to: of those that report it with an RSSI and
    /// are not offline, the strongest (equal ones: the newest report, then the name). Nil when
    /// no such gateway hears it.
    public func strongestGateway(for address: String) -> String? {
        guard let d = device(address) else { return nil }
        return strongest(d)
    }

    /// The newest heart-rate measurements of `address`, oldest first.
    public func heartRates(_ address: String) -> [HeartRate] { Self.key(address).flatMap { valueTable[$0]?.heartRates } ?? [] }

    /// The newest accelerometer samples of `address`, oldest first.
    public func accelerations(_ address: String) -> [Acceleration] { Self.key(address).flatMap { valueTable[$0]?.accelerations } ?? [] }

    /// How many accelerometer samples of `address` arrived (kept or not).
    public func accelerationCount(_ address: String) -> Int { Self.key(address).flatMap { valueTable[$0]?.accelerationCount } ?? 0 }

    /// How many devices have values kept now.
    public var devicesWithValues: Int { valueTable.count }

    /// `strongestGateway(for:)` of a device at hand.
    func strongest(_ d: Device) -> String? {
        d.sightings.filter { name, s in s.rssi != nil && gatewayTable[name]?.online != false }
            .max { a, b in
                let (ra, rb) = (a.value.rssi ?? -128, b.value.rssi ?? -128)
                if ra != rb { return ra < rb }
                let (ta, tb) = (a.value.time ?? 0, b.value.time ?? 0)
                if ta != tb { return ta < tb }
                return a.key > b.key
            }?.key
    }

    /// The strongest gateway's RSSI, -128 when there is none (the list's order).
    func bestRSSI(_ d: Device) -> Int {
        strongest(d).flatMap { d.sightings[$0]?.rssi } ?? -128
    }

    /// The canonical form of an address (`00:5A:B1:00:00:03`), or nil when it is none.
    static func key(_ text: String) -> String? {
        guard text.utf8.count == 17, let a = BDAddress(string: text) else { return nil }
        return a.description
    }

    // MARK: Receiving

    /// Takes one message from the broker; `now` (Unix milliseconds) stamps values that carry no
    /// time of their own.
    public mutating func receive(topic: String, payload: [UInt8], now: Int) -> Update {
        guard payload.count <= limits.maximumPayload else {
            return ignore("a payload of \(payload.count) octets on \(Self.shown(topic)) (the limit is \(limits.maximumPayload))")
        }
        guard topic.hasPrefix(prefix + "/") else { return ignore("a topic outside \(prefix)/: \(Self.shown(topic))") }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let name = levels.first, Self.isGatewayName(name) else { return ignore("no gateway name in \(Self.shown(topic))") }
        sequence += 1
        switch Array(levels.dropFirst()) {
        case ["status"]:
            return status(name, payload)
        case ["status", "stats"]:
            return statistics(name, payload)
        case let rest where rest.count == 2 && rest[0] == "adv":
            return advertisement(name, rest[1], payload)
        case let rest where rest.count == 3 && rest[0] == "dev":
            return value(name, rest[1], payload, now: now)
        default:
            // `cmd` and `reply` are the gateways' and their callers' business.
            return .unchanged
        }
    }

    /// `status`: online, offline, or cleared (the gateway retired).
    private mutating func status(_ name: String, _ payload: [UInt8]) -> Update {
        switch String(decoding: payload, as: UTF8.self) {
        case "online": touchGateway(name) { $0.online = true }
        case "offline": touchGateway(name) { $0.online = false }
        case "":
            // The retained status cleared: the gateway is retired, with what it reported.
            removeGateway(name)
        default:
            return ignore("a status of \(name) that is neither online nor offline")
        }
        return .gateway(name)
    }

    /// `status/stats`: the summary, or none when cleared.
    private mutating func statistics(_ name: String, _ payload: [UInt8]) -> Update {
        if payload.isEmpty {
            if gatewayTable[name] != nil { gatewayTable[name]?.statistics = nil }
            return .gateway(name)
        }
        guard let summary = UIBrokerPayloads.statistics(payload) else { return ignore("statistics of \(name) that are not a JSON object") }
        touchGateway(name) { $0.statistics = summary }
        return .gateway(name)
    }

    /// `adv/ADDRESS`: the gateway's report of a device, or its going (empty).
    private mutating func advertisement(_ gateway: String, _ addressText: String, _ payload: [UInt8]) -> Update {
        guard let address = Self.key(addressText) else { return ignore("an advertisement topic of \(gateway) without an address") }
        if payload.isEmpty {
            // Gone from this gateway (an empty retained payload); gone when no gateway hears it.
            guard deviceTable[address] != nil else { return .unchanged }
            deviceTable[address]?.sightings[gateway] = nil
            if deviceTable[address]?.sightings.isEmpty == true { deviceTable[address] = nil }
            return .device(address)
        }
        guard let ad = UIBrokerPayloads.advertisement(payload) else { return ignore("an advertisement of \(address) from \(gateway) that is not a JSON object") }
        touchGateway(gateway)
        if deviceTable[address] == nil {
            if deviceTable.count >= limits.devices, let oldest = deviceTable.values.min(by: { $0.lastHeard < $1.lastHeard }) {
                deviceTable[oldest.address] = nil
            }
            deviceTable[address] = Device(address: address, addressType: "public", serviceUUIDs: [], sightings: [:], lastHeard: sequence)
        }
        deviceTable[address]?.lastHeard = sequence
        if let t = ad.addressType { deviceTable[address]?.addressType = t }
        if let n = ad.name { deviceTable[address]?.name = n }
        if let c = ad.connectable { deviceTable[address]?.connectable = c }
        if !ad.serviceUUIDs.isEmpty { deviceTable[address]?.serviceUUIDs = ad.serviceUUIDs }
        deviceTable[address]?.sightings[gateway] = Sighting(rssi: ad.rssi, time: ad.time)
        return .device(address)
    }

    /// `dev/ADDRESS/CHARACTERISTIC`: a heart-rate or accelerometer value, or another one (unchanged).
    private mutating func value(_ gateway: String, _ addressText: String, _ payload: [UInt8], now: Int) -> Update {
        guard let address = Self.key(addressText) else { return ignore("a value topic of \(gateway) without an address") }
        if payload.isEmpty { return .unchanged }
        guard let o = UIBrokerPayloads.object(payload) else { return ignore("a value of \(address) from \(gateway) that is not a JSON object") }
        if let hr = UIBrokerPayloads.heartRate(o, gateway: gateway, now: now) {
            let limit = limits.heartRateHistory
            touchValues(address) { v in
                v.heartRates.append(hr)
                if v.heartRates.count > limit { v.heartRates.removeFirst(v.heartRates.count - limit) }
            }
            return .heartRate(address: address, hr)
        }
        if let a = UIBrokerPayloads.acceleration(o, gateway: gateway, now: now) {
            let limit = limits.accelerationHistory
            touchValues(address) { v in
                v.accelerations.append(a)
                v.accelerationCount += 1
                if v.accelerations.count > limit { v.accelerations.removeFirst(v.accelerations.count - limit) }
            }
            return .acceleration(address: address, a)
        }
        if o["heartRate"] != nil || o["accelerometer"] != nil { return ignore("a value of \(address) from \(gateway) that does not decode") }
        return .unchanged
    }

    // MARK: Keeping within bounds

    /// Changes the gateway named `name`, added if new (past the limit the least recently
    /// heard one goes first, with its sightings).
    private mutating func touchGateway(_ name: String, _ change: (inout Gateway) -> Void = { _ in }) {
        if gatewayTable[name] == nil, gatewayTable.count >= limits.gateways,
           let oldest = gatewayTable.values.min(by: { $0.lastHeard < $1.lastHeard })?.name {
            removeGateway(oldest)
        }
        var g = gatewayTable[name] ?? Gateway(name: name, lastHeard: sequence)
        g.lastHeard = sequence
        change(&g)
        gatewayTable[name] = g
    }

    /// Forgets a gateway and its reports; devices no other gateway reports go too.
    private mutating func removeGateway(_ name: String) {
        gatewayTable[name] = nil
        for (address, d) in deviceTable where d.sightings[name] != nil {
            deviceTable[address]?.sightings[name] = nil
            if deviceTable[address]?.sightings.isEmpty == true { deviceTable[address] = nil }
        }
    }

    /// Changes the values of `address`, added if new (past the limit the least recently
    /// heard device's values go first).
    private mutating func touchValues(_ address: String, _ change: (inout Values) -> Void) {
        if valueTable[address] == nil, valueTable.count >= limits.valueDevices,
           let oldest = valueTable.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key {
            valueTable[oldest] = nil
        }
        var v = valueTable[address] ?? Values(lastHeard: sequence)
        v.lastHeard = sequence
        change(&v)
        valueTable[address] = v
    }

    /// Counts a refused message and keeps why.
    private mutating func ignore(_ reason: String) -> Update {
        ignored += 1
        lastIgnored = reason
        return .ignored(reason)
    }

    /// A gateway's name as a topic level can hold it: 1 to 64 octets, no control characters,
    /// not the broker's (`$…`).
    static func isGatewayName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && !s.hasPrefix("$") && !s.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// A topic as a message shows it: at most 80 characters, control characters as `?`.
    static func shown(_ text: String) -> String {
        let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return String(String.UnicodeScalarView(cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }
}
