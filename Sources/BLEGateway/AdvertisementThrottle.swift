/// When a gateway publishes a device's advertisement (docs/GATEWAY.md#advertisements), sans-IO,
/// on the caller's clock:
///
/// - a device heard for the first time: at once;
/// - its advertisement changed (data, name, connectability: the `signature`), or its RSSI moved
///   by `rssiStep` dB or more since the last publication: at once if `interval` has passed since
///   the last one, else when it has (the newest state then);
/// - unchanged: again every `refresh`, so a watcher can tell a device still there from a
///   retained message of one gone;
/// - not heard for `forget`: forgotten, and the caller clears its retained message.
///
/// At most `maximumDevices` are tracked; past that the one heard longest ago is forgotten.
public struct AdvertisementThrottle<Key: Hashable & Sendable>: Sendable {
    public struct Settings: Sendable, Equatable {
        public var interval: Duration = .seconds(2)
        public var rssiStep = 6
        public var refresh: Duration = .seconds(60)
        public var forget: Duration = .seconds(120)
        public var maximumDevices = 2000
        public init() {}
    }

    private struct Entry: Sendable {
        var signature: Int
        /// The RSSI last published: the baseline a move is measured from.
        var rssi: Int?
        /// The RSSI last heard, published with a held-back change.
        var latestRSSI: Int?
        var lastPublished: Duration
        var lastHeard: Duration
        var pending: Bool
    }

    public let settings: Settings
    private var entries: [Key: Entry] = [:]

    public init(settings: Settings = Settings()) { self.settings = settings }

    public var count: Int { entries.count }

    /// A report of `key` at `now`: whether to publish now. Also returns the keys forgotten to
    /// stay within `maximumDevices` (their retained messages are for the caller to clear).
    public mutating func heard(_ key: Key, signature: Int, rssi: Int?, now: Duration) -> (publish: Bool, evicted: [Key]) {
        guard var e = entries[key] else {
            var evicted: [Key] = []
            if entries.count >= settings.maximumDevices, let oldest = entries.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key {
                entries[oldest] = nil
                evicted.append(oldest)
            }
            entries[key] = Entry(signature: signature, rssi: rssi, latestRSSI: rssi, lastPublished: now, lastHeard: now, pending: false)
            return (true, evicted)
        }
        e.lastHeard = now
        e.latestRSSI = rssi
        let changed = e.signature != signature || Self.moved(e.rssi, rssi, by: settings.rssiStep)
        var publish = false
        if changed || e.pending {
            if now - e.lastPublished >= settings.interval {
                publish = true
            } else {
                e.pending = true
            }
        } else if now - e.lastPublished >= settings.refresh {
            publish = true
        }
        if publish {
            e.signature = signature
            e.rssi = rssi
            e.lastPublished = now
            e.pending = false
        } else if changed {
            // Held back: the newest state is published when the interval has passed.
            e.signature = signature
        }
        entries[key] = e
        return (publish, [])
    }

    /// Devices whose held-back change may go out now (their last report is the one to publish).
    public mutating func due(now: Duration) -> [Key] {
        var keys: [Key] = []
        for (k, e) in entries where e.pending && now - e.lastPublished >= settings.interval {
            keys.append(k)
        }
        for k in keys {
            guard var e = entries[k] else { continue }
            e.pending = false
            e.lastPublished = now
            // What goes out now is the last report: its RSSI is the new baseline.
            e.rssi = e.latestRSSI
            entries[k] = e
        }
        return keys
    }

    /// Devices not heard for `forget`, now forgotten.
    public mutating func expired(now: Duration) -> [Key] {
        let gone = entries.filter { now - $0.value.lastHeard >= settings.forget }.map(\.key)
        for k in gone { entries[k] = nil }
        return gone
    }

    private static func moved(_ a: Int?, _ b: Int?, by step: Int) -> Bool {
        switch (a, b) {
        case let (x?, y?): return abs(x - y) >= step
        case (nil, nil): return false
        default: return true
        }
    }
}
