import BLEWire

/// A scan's device table: values keyed by an advertiser's address (its 48 bits and its type in one
/// integer), kept in one array in the order they were first heard and found through an
/// open-addressing index. A report costs one hash of one integer and, nearly always, one probe:
/// what a scanner hearing thousands of devices a second can afford per report, where a
/// `Dictionary` of structs costs a SipHash pass and a copy-on-write check on every access.
///
/// The hash mixes the key with a seed drawn per table, so addresses a peer picks (random
/// addresses are the advertiser's choice, Core spec Vol 6 Part B §1.3.2) cannot be chosen to
/// collide. Removal compacts the array and rebuilds the index: the scanner removes in batches
/// (ageing), never one device at a time on the hot path.
struct AddressTable<Value: Sendable>: Sendable {
    /// Each value's key, parallel to `values`.
    private(set) var keys: [UInt64] = []
    /// The values, oldest first; changed in place through `values[index]`.
    var values: [Value] = []
    /// Index slots: an index into `values`, or -1 for an empty slot. A power of two in size,
    /// at most half full.
    private var slots: [Int32] = []
    private var shift = 64
    private let seed = UInt64.random(in: .min ... .max)

    /// An empty table.
    init() {}

    /// How many values are kept.
    var count: Int { values.count }

    /// The table key of `address`: its 48 bits and its type above them.
    static func key(_ address: DeviceAddress) -> UInt64 {
        address.address.rawValue | UInt64(address.type.rawValue) << 48
    }

    /// The index in `values` of the value kept for `key`, if any.
    func index(of key: UInt64) -> Int? {
        guard !slots.isEmpty else { return nil }
        return slots.withUnsafeBufferPointer { s -> Int? in
            let mask = s.count - 1
            var i = slot(key)
            while true {
                let v = Int(s[i])
                if v < 0 { return nil }
                if keys[v] == key { return v }
                i = (i + 1) & mask
            }
        }
    }

    /// Adds `value` under `key`, which must not be in the table yet; returns its index.
    mutating func append(_ value: Value, for key: UInt64) -> Int {
        let index = values.count
        keys.append(key)
        values.append(value)
        if 2 * values.count > slots.count {
            rebuild(minimumSlots: 4 * values.count)
        } else {
            place(index)
        }
        return index
    }

    /// Removes every value `shouldRemove` picks, keeping the others in their order.
    mutating func removeAll(where shouldRemove: (Value) -> Bool) {
        var kept = 0
        for i in values.indices where !shouldRemove(values[i]) {
            if kept != i {
                values.swapAt(kept, i)
                keys.swapAt(kept, i)
            }
            kept += 1
        }
        guard kept < values.count else { return }
        values.removeSubrange(kept...)
        keys.removeSubrange(kept...)
        rebuild(minimumSlots: max(16, 4 * values.count))
    }

    private func slot(_ key: UInt64) -> Int {
        // The SplitMix64 finaliser over the seeded key, then the top bits (Fibonacci hashing).
        var z = key &+ seed
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return shift >= 64 ? 0 : Int(truncatingIfNeeded: z >> UInt64(shift))
    }

    private mutating func place(_ index: Int) {
        let mask = slots.count - 1
        var i = slot(keys[index])
        while slots[i] >= 0 { i = (i + 1) & mask }
        slots[i] = Int32(index)
    }

    private mutating func rebuild(minimumSlots: Int) {
        var size = 16
        while size < minimumSlots { size <<= 1 }
        shift = 64 - size.trailingZeroBitCount
        slots = [Int32](repeating: -1, count: size)
        for i in values.indices { place(i) }
    }
}
