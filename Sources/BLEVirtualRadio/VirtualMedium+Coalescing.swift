import BLEHCI

extension Array where Element == VirtualMedium.Delivery {
    /// The deliveries with every controller's Number Of Completed Packets events merged into
    /// one per host, at the place of its first, with one entry per handle (counts added, handles
    /// in the order they first appear). Core spec Vol 4 Part E §7.7.19 lets a controller report
    /// completed packets when it likes, for several handles at once; §4.1.1 only requires that
    /// every packet is reported. The radio does this for the deliveries of one batch of host
    /// frames, as a controller reporting once per connection event would: a burst of fragments
    /// then returns its credits in one event instead of one event per fragment.
    ///
    /// Moving a later report earlier never credits a packet before it was sent (the whole batch
    /// reached the controller first); a report for a link that ended in between is dropped by
    /// the host as for any flushed packet.
    func coalescingCompletedPackets() -> [VirtualMedium.Delivery] {
        // Counted with each delivery read where it lies (a `for` loop copied every one out).
        let reports = withUnsafeBufferPointer { batch in
            var n = 0
            for i in batch.indices where batch[i].isCompletedPackets { n += 1 }
            return n
        }
        guard reports > 1 else { return self }
        // Per destination: where its merged event goes, and its entries. A small array searched
        // linearly (a batch reaches one or two hosts), not a hashed dictionary.
        var merged: [(to: VirtualMedium.ControllerID, index: Int, entries: [CompletedPackets])] = []
        var out: [VirtualMedium.Delivery] = []
        out.reserveCapacity(count)
        for d in self {
            guard d.isCompletedPackets, case let .event(.numberOfCompletedPackets(entries)) = d.packet else {
                out.append(d)
                continue
            }
            if let m = merged.firstIndex(where: { $0.to == d.to }) {
                for e in entries {
                    if let i = merged[m].entries.firstIndex(where: { $0.handle == e.handle }) {
                        let (sum, overflow) = merged[m].entries[i].count.addingReportingOverflow(e.count)
                        merged[m].entries[i].count = overflow ? .max : sum
                    } else {
                        merged[m].entries.append(e)
                    }
                }
            } else {
                merged.append((d.to, out.count, entries))
                out.append(d)
            }
        }
        for m in merged {
            // More handles than one event carries: the rest in further events at the end.
            let events = HCIEvent.numberOfCompletedPacketsEvents(m.entries)
            guard let first = events.first else { continue }
            out[m.index] = VirtualMedium.Delivery(to: m.to, packet: .event(first))
            for e in events.dropFirst() { out.append(VirtualMedium.Delivery(to: m.to, packet: .event(e))) }
        }
        return out
    }
}
