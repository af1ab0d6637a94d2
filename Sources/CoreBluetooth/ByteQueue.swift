/// Bytes waiting in one direction of an L2CAP channel's streams: appended at the back, taken
/// from the front, with the storage compacted once the front has moved past half of it (so
/// each byte is copied a bounded number of times).
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    /// How many bytes wait.
    var count: Int { storage.count - head }
    /// Whether none wait.
    var isEmpty: Bool { head == storage.count }

    /// Adds bytes at the back.
    mutating func append<C: Collection>(contentsOf bytes: C) where C.Element == UInt8 {
        storage.append(contentsOf: bytes)
    }

    /// Copies up to `capacity` bytes from the front into `buffer` and drops them; how many.
    mutating func take(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        let n = min(capacity, count)
        guard n > 0 else { return 0 }
        storage.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            buffer.update(from: base + head, count: n)
        }
        drop(n)
        return n
    }

    /// Takes up to `limit` bytes from the front.
    mutating func take(upTo limit: Int) -> [UInt8] {
        let n = min(limit, count)
        let bytes = Array(storage[head..<head + n])
        drop(n)
        return bytes
    }

    private mutating func drop(_ n: Int) {
        head += n
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > storage.count / 2 {
            storage.removeFirst(head)
            head = 0
        }
    }
}
