import BLERuntime
import BLEHost

/// The values of one `Peripheral.notifications` stream that its consumer has not taken yet:
/// at most `HostConfiguration.notificationBufferLimit`, newer ones dropped while full (what
/// `AsyncStream`'s `.bufferingOldest` does); the consumer letting the stream go, or cancelling
/// its task, abandons the queue.
typealias NotificationQueue = SingleConsumerQueue<[UInt8]>

extension SingleConsumerQueue where Element == [UInt8] {
    /// A notification stream's queue holding at most `limit` values.
    convenience init(limit: Int) {
        self.init(limit: limit, overflow: .dropNewest, cancellation: .abandonsQueue)
    }
}

/// One link's waiting GATT client callers and streams (`GATTClientSessions`).
struct GATTClientSession {
    /// A consumer of one characteristic's notifications and indications (Vol 3 Part G §4.10,
    /// §4.11).
    struct NotificationSink {
        let valueHandle: UInt16
        let queue: NotificationQueue
    }

    var procedures = ContinuationTable<GATTOutput>()
    /// Every notification stream of the link, in the order they were opened (so several
    /// consumers of one value get it in that order). Searched linearly: a link has a few, and
    /// hashing the value handle of every notification cost more than the scan.
    var notificationSinks: [NotificationSink] = []
    /// Value handles of Service Changed characteristics learned by discovery (Vol 3 Part G §7.1);
    /// almost always none or one.
    var serviceChangedHandles: [UInt16] = []
    var servicesChangedSinks: [UInt64: AsyncStream<ClosedRange<UInt16>>.Continuation] = [:]

    /// Hands `value` to every stream of `valueHandle`; true when one of them takes no more (its
    /// consumer has gone).
    static func yield(_ value: [UInt8], from valueHandle: UInt16, to sinks: [NotificationSink]) -> Bool {
        var abandoned = false
        for sink in sinks where sink.valueHandle == valueHandle && !sink.queue.push(value) { abandoned = true }
        return abandoned
    }
}

/// What `GATTClientSessionTable.deliver` did with a value.
enum GATTClientDelivery {
    /// The link has no session: nobody listens.
    case noSession
    /// The value is Service Changed's (Vol 3 Part G §7.1): handled by the owner, then handed on.
    case serviceChanged
    /// Handed to the value's streams; `abandoned` when one of them has gone.
    case delivered(abandoned: Bool)
}

/// The GATT client's sessions by link handle: a short array searched linearly, like
/// `LinkTable` and for the same reason (a host has a handful of links, and the notification
/// path looked the session up by hashing the handle on every PDU).
struct GATTClientSessionTable {
    private var handles: [UInt16] = []
    private var sessions: [GATTClientSession] = []

    private func index(of handle: UInt16) -> Int? {
        var i = 0
        while i < handles.count {
            if handles[i] == handle { return i }
            i += 1
        }
        return nil
    }

    /// Hands a notification's or indication's value to the streams of `valueHandle` on link
    /// `handle`, reading only what it needs of the session (not a copy of all of it), unless
    /// the value is Service Changed's.
    func deliver(_ value: [UInt8], from valueHandle: UInt16, onLink handle: UInt16) -> GATTClientDelivery {
        guard let i = index(of: handle) else { return .noSession }
        if !sessions[i].serviceChangedHandles.isEmpty, sessions[i].serviceChangedHandles.contains(valueHandle) {
            return .serviceChanged
        }
        return .delivered(abandoned: GATTClientSession.yield(value, from: valueHandle, to: sessions[i].notificationSinks))
    }

    /// Reads the session of `handle`; nil when the link has none. The borrow still copies the
    /// session (as `LinkTable.read` does a link): for the paths off the notification one.
    func read<R>(_ handle: UInt16, _ body: (borrowing GATTClientSession) -> R) -> R? {
        guard let i = index(of: handle) else { return nil }
        return sessions.withUnsafeBufferPointer { body($0[i]) }
    }

    /// Runs `body` on the session of `handle` in place; nil when the link has none.
    @discardableResult
    mutating func withSession<R>(_ handle: UInt16, _ body: (inout GATTClientSession) -> R) -> R? {
        guard let i = index(of: handle) else { return nil }
        return body(&sessions[i])
    }

    /// Runs `body` on the session of `handle` in place, making it first if the link has none.
    @discardableResult
    mutating func withSession<R>(creating handle: UInt16, _ body: (inout GATTClientSession) -> R) -> R {
        let i: Int
        if let found = index(of: handle) {
            i = found
        } else {
            handles.append(handle)
            sessions.append(GATTClientSession())
            i = sessions.count - 1
        }
        return body(&sessions[i])
    }

    /// Takes the session of `handle` out of the table.
    mutating func remove(_ handle: UInt16) -> GATTClientSession? {
        guard let i = index(of: handle) else { return nil }
        handles.remove(at: i)
        return sessions.remove(at: i)
    }
}
