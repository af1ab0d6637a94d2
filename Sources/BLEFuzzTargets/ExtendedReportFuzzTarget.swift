import BLEHCI
import BLEHost

/// `ExtendedReportAssembler` fed the reports of twelve interleaved advertisers (more than it
/// assembles at once, so it drops and skips chains), each report a Data_Status and a fragment
/// of up to 255 octets, with chains forgotten now and then (Core spec Vol 4 Part E §7.7.65.13).
/// Checked against each advertiser's chain as it was sent:
/// - nothing handed on is over `maximumDataLength`;
/// - an advertisement handed on whole (not truncated) ends with a "complete" report and is its
///   whole chain: never part of one whose head was dropped, never bytes of another advertiser
///   (twelve advertisers are fewer than the assembler tracks, pending and skipped, so a chain it
///   dropped is skipped to its end);
/// - handed on before its last report only when it outgrew `maximumDataLength`, then truncated,
///   and once per chain;
/// - while no chain was dropped since this one began, exactly what the chain says: its data (cut
///   at `maximumDataLength`) when its last report comes, truncated when that report says so or it
///   was cut, and nothing more after a chain already handed on.
enum ExtendedReportFuzzTarget {
    static let advertisers: UInt8 = 12
    static let statuses: [AdvertisingDataStatus] = [.incompleteMoreToCome, .complete, .incompleteMoreToCome, .incompleteTruncated]

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        typealias Assembler = ExtendedReportAssembler<UInt8>
        var assembler = Assembler()
        let limit = Assembler.maximumDataLength
        // Per advertiser: the fragments of its chain under way, the assembler's drop count when
        // it began, and whether it was already handed on (truncated, past the limit).
        var chains: [UInt8: [[UInt8]]] = [:]
        var droppedAtStart: [UInt8: Int] = [:]
        var handedOn: Set<UInt8> = []
        var steps = 0
        while !input.isAtEnd, steps < 512 {
            steps += 1
            let op = input.u8()
            let key = op % advertisers
            if op >= 0xF8 {
                // The owner forgets the advertiser (a sync that ended), or everything (the
                // controller stopped scanning).
                if op == 0xFF {
                    assembler.removeAll()
                    chains = [:]
                    handedOn = []
                } else {
                    assembler.forget(key)
                    chains[key] = nil
                    handedOn.remove(key)
                }
                continue
            }
            let status = statuses[Int(op / advertisers) % statuses.count]
            let fragment = input.chunk()
            let droppedBefore = assembler.dropped
            if chains[key] == nil {
                chains[key] = []
                droppedAtStart[key] = droppedBefore
            }
            chains[key, default: []].append(fragment)
            let fragments = chains[key] ?? []
            let whole = fragments.flatMap { $0 }
            let wasHandedOn = handedOn.contains(key)
            let got = assembler.receive(key, status: status, data: fragment)
            let last = status != .incompleteMoreToCome

            if let got {
                FuzzCheck.require(got.data.count <= limit, "advertiser \(key): \(got.data.count) octets handed on, over \(limit)")
                if got.truncated {
                    if !last {
                        FuzzCheck.require(whole.count > limit && !wasHandedOn,
                                          "advertiser \(key): handed on truncated mid-chain at \(whole.count) octets (again: \(wasHandedOn))")
                        handedOn.insert(key)
                    }
                } else {
                    FuzzCheck.require(status == .complete, "advertiser \(key): a \(status) report handed on as whole")
                    // With fewer advertisers than the assembler tracks (pending and skipped), a
                    // chain it dropped is always skipped to its end: whole is the whole chain.
                    FuzzCheck.require(got.data == whole, "advertiser \(key): handed on as whole \(got.data.count) octets of a "
                                      + "\(whole.count)-octet chain")
                }
            }
            if droppedBefore == droppedAtStart[key] {
                // No chain was dropped since this one began: the assembler saw all of it.
                let expected: (data: [UInt8], truncated: Bool)?
                if !last {
                    expected = whole.count > limit && !wasHandedOn ? (Array(whole.prefix(limit)), true) : nil
                } else if wasHandedOn {
                    expected = nil
                } else {
                    expected = (Array(whole.prefix(limit)), status != .complete || whole.count > limit)
                }
                let same = got.map { $0.data == expected?.data && $0.truncated == expected?.truncated } ?? (expected == nil)
                FuzzCheck.require(same, "advertiser \(key), chain of \(fragments.count) reports (\(whole.count) octets) ending \(status): "
                                  + "handed on \(String(describing: got.map { ($0.data.count, $0.truncated) })), "
                                  + "not \(String(describing: expected.map { ($0.data.count, $0.truncated) }))")
            }
            if last {
                chains[key] = nil
                handedOn.remove(key)
            }
        }
    }

    /// Seeds: one advertiser's chain of three reports; two interleaved chains, one truncated;
    /// a chain past the data limit; thirteen advertisers at once (drops and skips).
    static var seeds: [[UInt8]] {
        let full = [UInt8](repeating: 0xAB, count: 255)
        // Status index = op / 12 % 4: 0 more to come, 1 complete, 3 truncated.
        func report(_ key: UInt8, _ status: Int, _ data: [UInt8]) -> [UInt8] { [UInt8(status * 12) + key, UInt8(data.count)] + data }
        let three = report(0, 0, [1, 2, 3]) + report(0, 0, [4, 5]) + report(0, 1, [6])
        let interleaved = report(1, 0, [1]) + report(2, 0, [9]) + report(1, 1, [2]) + report(2, 3, [8])
        let long = (0..<7).flatMap { _ in report(3, 0, full) } + report(3, 0, full) + report(3, 1, [1])
        let crowd = (0..<12).flatMap { report(UInt8($0), 0, [UInt8($0)]) } + report(0, 1, [0xEE]) + report(11, 1, [0xFF])
        return [three, interleaved, long, crowd, three + [0xFF] + interleaved]
    }
}
