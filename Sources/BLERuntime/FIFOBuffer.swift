/// Values in arrival order, appended at the back and taken from the front: an array and the index
/// of its first live value, compacted once the front has moved past half of it, so each value is
/// moved a bounded number of times and a steady stream reuses one allocation.
///
/// It does no locking and never waits: it is the storage of `SingleConsumerQueue`, and of
/// anything that already holds a lock of its own around its buffers (the CoreBluetooth L2CAP
/// stream bridge keeps its bytes in two). Inlinable, so it is specialised for its element where
/// it is used.
public struct FIFOBuffer<Element> {
    /// The values from `head` on are live; the ones before it were taken or dropped.
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    /// An empty buffer.
    @inlinable
    public init() {}

    /// How many values wait.
    @inlinable
    public var count: Int { storage.count - head }

    /// Whether none wait.
    @inlinable
    public var isEmpty: Bool { head == storage.count }

    /// Adds `value` at the back.
    @inlinable
    public mutating func append(_ value: Element) {
        storage.append(value)
    }

    /// Adds `values` at the back, in order.
    @inlinable
    public mutating func append(contentsOf values: some Sequence<Element>) {
        storage.append(contentsOf: values)
    }

    /// Adds `values` at the back, in order, taking them from the caller: when nothing waits the
    /// caller's array itself becomes the storage (and `values` gets the old, empty storage with
    /// its capacity), so the values are neither copied nor released.
    @inlinable
    public mutating func append(moving values: inout [Element]) {
        if isEmpty {
            storage.removeAll(keepingCapacity: true)
            head = 0
            swap(&storage, &values)
        } else {
            storage.append(contentsOf: values)
            values.removeAll(keepingCapacity: true)
        }
    }

    /// Takes the oldest value; nil when none waits.
    @inlinable
    public mutating func removeFirst() -> Element? {
        guard head < storage.count else { return nil }
        let value = storage[head]
        dropFirst(1)
        return value
    }

    /// Drops the `n` oldest values (at most as many as wait).
    @inlinable
    public mutating func dropFirst(_ n: Int) {
        head += min(max(0, n), count)
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > Self.compactionThreshold && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// How far the front may move before the storage is compacted (below it, moving the live
    /// values costs more than the room it would give back).
    @inlinable
    static var compactionThreshold: Int { 64 }

    /// Takes up to `limit` of the oldest values, in order.
    @inlinable
    public mutating func removeFirst(upTo limit: Int) -> [Element] {
        let n = min(max(0, limit), count)
        let values = Array(storage[head..<head + n])
        dropFirst(n)
        return values
    }

    /// Moves up to `capacity` of the oldest values into the memory at `destination` (which must
    /// be initialised, as `update(from:count:)` requires) and drops them; how many.
    @inlinable
    public mutating func removeFirst(into destination: UnsafeMutablePointer<Element>, capacity: Int) -> Int {
        let n = min(max(0, capacity), count)
        guard n > 0 else { return 0 }
        storage.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            destination.update(from: base + head, count: n)
        }
        dropFirst(n)
        return n
    }

    /// Takes every value: they trade places with `spare` (emptied by the caller, with whatever
    /// capacity it kept), which then holds them in order, while the buffer goes on in the spare's
    /// storage. A spare without capacity is given room for as many values as this batch had, so
    /// appending need not grow it from nothing.
    @inlinable
    public mutating func removeAll(swappingWith spare: inout [Element]) {
        if head > 0 {
            // The live values move to the front (moved, not copied: no value is retained, and
            // only the ones already taken are released), so the storage itself can be handed over.
            storage.removeFirst(head)
            head = 0
        }
        swap(&storage, &spare)
        if storage.capacity == 0 { storage.reserveCapacity(spare.count) }
    }

    /// Drops every value.
    @inlinable
    public mutating func removeAll() {
        storage = []
        head = 0
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
