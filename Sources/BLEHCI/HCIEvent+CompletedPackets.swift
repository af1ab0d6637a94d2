extension HCIEvent {
    /// The entries of a Number Of Completed Packets event (Core spec Vol 4 Part E §7.7.19), read
    /// in place from the event packet (without its H4 indicator) and handed to `body` as
    /// (handle, count) in order, with no `HCIEvent` or entry array made: the host gets one of
    /// these for every packet the controller sent. False, with `body` never called, for any
    /// other event and for one whose lengths do not add up; `decode` then says what it is (or
    /// why it is malformed), exactly as for every other event.
    public static func scanCompletedPackets(_ payload: [UInt8], _ body: (_ handle: UInt16, _ count: UInt16) -> Void) -> Bool {
        payload.withUnsafeBufferPointer { p -> Bool in
            // Event code, parameter length (matching the bytes present), Number_of_Handles, and
            // that many 4-byte handle/count pairs (interleaved per entry, as `decode` reads them).
            guard p.count >= 3, p[0] == Code.numberOfCompletedPackets, Int(p[1]) == p.count - 2 else { return false }
            let n = Int(p[2])
            guard 1 + 4 * n <= Int(p[1]) else { return false }
            var i = 3
            for _ in 0..<n {
                body((UInt16(p[i]) | UInt16(p[i + 1]) << 8) & 0x0FFF, UInt16(p[i + 2]) | UInt16(p[i + 3]) << 8)
                i += 4
            }
            return true
        }
    }

    /// The packet (without its H4 indicator) of a Number Of Completed Packets event with the one
    /// entry `entry` (Core spec Vol 4 Part E §7.7.19): the bytes of
    /// `numberOfCompletedPackets([entry]).encode()`, without the entry array.
    public static func encodeCompletedPackets(_ entry: CompletedPackets) -> [UInt8] {
        [Code.numberOfCompletedPackets, 5, 1, UInt8(entry.handle & 0xFF), UInt8(entry.handle >> 8),
         UInt8(entry.count & 0xFF), UInt8(entry.count >> 8)]
    }
}
