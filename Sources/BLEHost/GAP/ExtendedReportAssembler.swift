import BLEHCI
import BLEWire

/// Puts an extended advertisement's data back together from the reports a controller cuts it
/// into, sans-IO. Core spec Vol 4 Part E §7.7.65.13: an advertisement longer than one event
/// (or one received as AUX_ADV_IND plus AUX_CHAIN_INDs, Vol 6 Part B §2.3.4.9) comes as several
/// LE Extended Advertising Reports from the same advertiser, each but the last with Data_Status
/// "incomplete, more data to come"; the last says "complete", or "incomplete, truncated" when the
/// controller lost the rest of the chain. The same holds for periodic advertising reports
/// (§7.7.65.15), keyed by their sync handle.
///
/// A truncated advertisement is handed on marked truncated, never as complete. Memory is
/// bounded: at most `maximumPending` advertisements are assembled at once (the oldest is dropped
/// for a new one, counted in `dropped`), each at most `maximumDataLength` octets (beyond it the
/// advertisement is handed on truncated and the rest of its chain is skipped).
public struct ExtendedReportAssembler<Key: Hashable & Sendable>: Sendable {
    /// One advertisement's data so far.
    private struct Pending: Sendable {
        let key: Key
        var data: [UInt8]
        /// The advertisement outgrew `maximumDataLength` and was handed on: the rest of its
        /// chain is skipped until its last report.
        var skipping = false
    }

    /// The most data one advertisement may carry (the controller's LE Read Maximum Advertising
    /// Data Length can be at most 1,650, §7.8.57).
    public static var maximumDataLength: Int { 1650 }
    /// Advertisements assembled at once.
    public static var maximumPending: Int { 8 }
    /// Dropped chains whose tails are skipped at once. Beyond it the oldest is forgotten, and
    /// its tail, if it still comes, passes as a whole advertisement: HCI gives no way to tell
    /// a tail from a one-report advertisement (the Advertising DID is not reported).
    public static var maximumSkipped: Int { 32 }

    /// Oldest first; at most `maximumPending`, so a linear search is the cheap one.
    private var pending: [Pending] = []
    /// Partial advertisements dropped to make room for newer ones.
    public private(set) var dropped = 0
    /// Keys whose partial advertisement was dropped: the rest of that chain is skipped (its
    /// tail handed on as a whole advertisement would be wrong), up to its last report. At most
    /// `maximumSkipped`.
    private var skipped: [Key] = []

    public init() {}

    /// Whether no advertisement is partly assembled (a complete report then needs no look-up).
    public var isEmpty: Bool { pending.isEmpty && skipped.isEmpty }

    /// An advertisement's data once its last report is in.
    public struct Assembled: Hashable, Sendable {
        public var data: [UInt8]
        /// The chain was cut short (by the controller, or beyond `maximumDataLength`).
        public var truncated: Bool
    }

    /// Takes one report's data with its Data_Status; the whole advertisement when this report
    /// ends it, nil while more is to come (or while the rest of a chain already handed on is
    /// skipped).
    public mutating func receive(_ key: Key, status: AdvertisingDataStatus, data: UnsafeBufferPointer<UInt8>) -> Assembled? {
        let index = pending.firstIndex { $0.key == key }
        let last = status != .incompleteMoreToCome
        if index == nil, let s = skipped.firstIndex(of: key) {
            if last { skipped.remove(at: s) }
            return nil
        }
        if status == .complete, index == nil { return Assembled(data: Array(data), truncated: false) }
        let i = index ?? start(key)
        if pending[i].skipping {
            if last { pending.remove(at: i) }
            return nil
        }
        let room = Self.maximumDataLength - pending[i].data.count
        let overflow = data.count > room
        pending[i].data.append(contentsOf: data.prefix(room))
        if overflow && !last {
            pending[i].skipping = true
            return Assembled(data: pending[i].data, truncated: true)
        }
        guard last else { return nil }
        let whole = pending.remove(at: i)
        return Assembled(data: whole.data, truncated: overflow || status != .complete)
    }

    /// `receive` for data in an array.
    public mutating func receive(_ key: Key, status: AdvertisingDataStatus, data: [UInt8]) -> Assembled? {
        data.withUnsafeBufferPointer { receive(key, status: status, data: $0) }
    }

    /// Forgets what was assembled for `key` (a sync that ended, a scan that stopped).
    public mutating func forget(_ key: Key) {
        pending.removeAll { $0.key == key }
        skipped.removeAll { $0 == key }
    }

    /// Forgets everything partly assembled.
    public mutating func removeAll() {
        pending.removeAll()
        skipped.removeAll()
    }

    /// A new advertisement for `key`, the oldest dropped when `maximumPending` are under way.
    private mutating func start(_ key: Key) -> Int {
        if pending.count >= Self.maximumPending {
            let oldest = pending.removeFirst()
            dropped += 1
            if skipped.count >= Self.maximumSkipped { skipped.removeFirst() }
            skipped.append(oldest.key)
        }
        pending.append(Pending(key: key, data: []))
        return pending.count - 1
    }
}

/// What tells one extended advertiser's chains apart: its address (or anonymity), its
/// Advertising_SID, and whether the chain is a scan response (§7.7.65.13).
public struct ExtendedAdvertisementKey: Hashable, Sendable {
    public var address: DeviceAddress
    public var isAnonymous: Bool
    public var sid: UInt8?
    public var scanResponse: Bool

    public init(address: DeviceAddress, isAnonymous: Bool = false, sid: UInt8?, scanResponse: Bool) {
        self.address = address
        self.isAnonymous = isAnonymous
        self.sid = sid
        self.scanResponse = scanResponse
    }
}
