import Foundation
import BLEHCI

/// `ble-bench scan-events --out FILE [--reports-per-event K]`: writes the two rounds of
/// `AdvertisingPopulation` that `ble-bench scan` feeds its host, byte for byte, so another host
/// (scripts/lib/bumble_scan_cost.py, Bumble's) can be fed exactly the same HCI events.
///
/// The file is a sequence of records, each `reports` (UInt16, little-endian), `length`
/// (UInt16, little-endian) and `length` bytes of one H4 packet (packet type 0x04, then the HCI
/// event, Core spec Vol 4 Part A §2 and Part E §5.4.4). `reports` is the number of advertising
/// reports in the event (0 for a malformed one); a record with `reports` 0xFFFF and no bytes ends
/// a round (one second of the population's advertising).
enum ScanEventsDump {
    static let roundEnd: UInt16 = 0xFFFF

    /// The bytes of the file for `reportsPerEvent` (1...25).
    static func encode(reportsPerEvent: Int) -> [UInt8] {
        var out: [UInt8] = []
        func u16(_ v: UInt16) { out += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        for variant: UInt8 in [0, 1] {
            let round = AdvertisingPopulation.round(variant: variant, reportsPerEvent: reportsPerEvent)
            for (frame, reports) in zip(round.frames, round.reportCounts) {
                let bytes = frame.bytes
                u16(UInt16(reports))
                u16(UInt16(bytes.count))
                out += bytes
            }
            u16(roundEnd)
            u16(0)
        }
        return out
    }
}

func dumpScanEvents(to path: String?, reportsPerEvent: Int?) throws {
    guard let path else {
        FileHandle.standardError.write(Data("ble-bench: scan-events needs --out FILE\n".utf8))
        exit(2)
    }
    let bytes = ScanEventsDump.encode(reportsPerEvent: max(1, min(25, reportsPerEvent ?? 25)))
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    print("scan-events: \(bytes.count) bytes, two rounds of \(AdvertisingPopulation.deviceCount) devices, written to \(path)")
}
