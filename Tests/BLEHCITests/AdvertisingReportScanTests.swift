import BLEHCI
import BLEWire
import XCTest

/// `HCIEvent.scanAdvertisingReports` reads LE (Extended) Advertising Report events in place for
/// the scanner's hot path; it must accept exactly the events `HCIEvent.decode` accepts as such and
/// give the same reports (Core spec Vol 4 Part E §7.7.65.2, §7.7.65.13), so that reading in place
/// changes nothing a scan sees, and a malformed event still goes to `decode` for its typed error.
final class AdvertisingReportScanTests: XCTestCase {
    /// The fields the scanner uses, from either reader.
    struct Seen: Equatable {
        var properties: UInt16
        var address: DeviceAddress
        var rssi: Int8
        var data: [UInt8]
        var isAnonymous = false
        var primaryPHY: UInt8 = 1
        var secondaryPHY: UInt8?
        var advertisingSID: UInt8?
        var txPower: Int8 = 127
        var periodicAdvertisingInterval: UInt16 = 0
    }

    func scanned(_ payload: [UInt8]) -> [Seen]? {
        var seen: [Seen] = []
        let taken = HCIEvent.scanAdvertisingReports(payload) { r in
            seen.append(Seen(properties: r.properties.rawValue, address: r.address, rssi: r.rssi, data: Array(r.data),
                             isAnonymous: r.isAnonymous, primaryPHY: r.primaryPHY.rawValue,
                             secondaryPHY: r.secondaryPHY?.rawValue, advertisingSID: r.advertisingSID,
                             txPower: r.txPower, periodicAdvertisingInterval: r.periodicAdvertisingInterval))
        }
        if !taken { XCTAssertEqual(seen, [], "nothing handed out for an event not taken") }
        return taken ? seen : nil
    }

    func decoded(_ payload: [UInt8]) -> [Seen]? {
        guard let event = try? HCIEvent.decode(payload) else { return nil }
        switch event {
        case let .le(.advertisingReport(reports)), let .le(.extendedAdvertisingReport(reports)):
            return reports.map {
                Seen(properties: $0.properties.rawValue, address: $0.address, rssi: $0.rssi, data: $0.data,
                     isAnonymous: $0.isAnonymous, primaryPHY: $0.primaryPHY.rawValue, secondaryPHY: $0.secondaryPHY?.rawValue,
                     advertisingSID: $0.advertisingSID, txPower: $0.txPower,
                     periodicAdvertisingInterval: $0.periodicAdvertisingInterval)
            }
        default:
            return nil
        }
    }

    let a = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let b = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_01_02_03), type: .public)

    var legacy: [UInt8] {
        HCIEvent.le(.advertisingReport([
            LEAdvertisingReport(legacy: .advInd, address: a, data: [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18], rssi: -60),
            LEAdvertisingReport(legacy: .scanRsp, address: a, data: [0x04, 0x09, 0x48, 0x52, 0x4D], rssi: -61),
            LEAdvertisingReport(legacy: .advNonconnInd, address: b, data: [], rssi: LEAdvertisingReport.unavailable),
        ])).h4Frame.payload
    }

    var extended: [UInt8] {
        HCIEvent.le(.extendedAdvertisingReport([
            LEAdvertisingReport(properties: [.connectable], address: a, primaryPHY: .leCoded, secondaryPHY: .le2M,
                                advertisingSID: 3, txPower: 4, rssi: -70, periodicAdvertisingInterval: 0x0050,
                                data: [0x02, 0x01, 0x06]),
            LEAdvertisingReport(properties: [.connectable, .directed], address: b, rssi: -71,
                                directAddress: DeviceAddress(BDAddress(rawValue: 0x4A_00_00_00_00_01), type: .random), data: [0xAA]),
            LEAdvertisingReport(properties: [.scannable, .scanResponse], address: a, isAnonymous: true, rssi: -72,
                                data: [UInt8](repeating: 0x11, count: 40)),
        ])).h4Frame.payload
    }

    /// Well-formed events of both kinds: the same reports, in order, as `decode` gives.
    func testReadsWhatDecodeReads() throws {
        for payload in [legacy, extended] {
            let expected = try XCTUnwrap(decoded(payload))
            XCTAssertEqual(expected.count, 3)
            XCTAssertEqual(scanned(payload), expected)
        }
        XCTAssertEqual(scanned(legacy)?.map(\.rssi), [-60, -61, 127])
        XCTAssertEqual(scanned(extended)?.map(\.rssi), [-70, -71, -72])
        XCTAssertEqual(scanned(extended)?.last?.data.count, 40)
        // The extended fields, read where they lie (the first report sets every one of them).
        let first = try XCTUnwrap(scanned(extended)?.first)
        XCTAssertEqual([first.primaryPHY, first.secondaryPHY ?? 0, first.advertisingSID ?? 0xFF], [3, 2, 3])
        XCTAssertEqual(first.txPower, 4)
        XCTAssertEqual(first.periodicAdvertisingInterval, 0x0050)
        XCTAssertEqual(scanned(extended)?.last?.isAnonymous, true)
        XCTAssertEqual(scanned(legacy)?.first, Seen(properties: scanned(legacy)?.first?.properties ?? 0, address: a, rssi: -60,
                                                     data: [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18]),
                       "a legacy report: 1M, no secondary PHY, SID, TX power or periodic interval")
    }

    /// Other events, and advertising report events the reader must leave to `decode`: a reserved
    /// Event_Type or address type, a report running past the event, a wrong parameter length.
    func testLeavesOtherAndMalformedEventsToDecode() {
        XCTAssertNil(scanned(HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0]).h4Frame.payload))
        XCTAssertNil(scanned([HCIEvent.Code.leMeta, 1, LEMetaEvent.Subevent.advertisingReport]), "no Num_Reports")
        var reservedType = legacy
        reservedType[4] = 0x05
        XCTAssertNil(scanned(reservedType))
        var reservedAddress = legacy
        reservedAddress[5] = 0x04
        XCTAssertNil(scanned(reservedAddress))
        XCTAssertNil(scanned(Array(legacy.dropLast())), "length octet no longer matches")
        var short = Array(legacy.dropLast())
        short[1] -= 1
        XCTAssertNil(scanned(short), "the last report's RSSI is missing")
        XCTAssertNil(decoded(short))
        var directType = extended
        // The second report (directed): its Direct_Address_Type.
        directType[4 + 24 + 3 + 16] = 0x09
        XCTAssertNil(decoded(directType))
        XCTAssertNil(scanned(directType))
    }

    /// Mutated events (bytes changed, cut, extended, the length octet kept consistent or not):
    /// the in-place reader takes an event exactly when `decode` accepts it as advertising
    /// reports, and then reads the same reports.
    func testAgreesWithDecodeOnMutatedEvents() {
        var random = SplitMix(seed: 0x5CA7_7E57)
        var taken = 0, left = 0
        for round in 0..<6_000 {
            var p = round % 2 == 0 ? legacy : extended
            for _ in 0..<(1 + Int(random.next() % 3)) {
                let i = 2 + Int(random.next() % UInt64(p.count - 2))
                switch random.next() % 4 {
                case 0: p[i] = UInt8(truncatingIfNeeded: random.next())
                case 1: p[i] ^= 1 << UInt8(random.next() % 8)
                case 2: p.removeLast(Int(random.next() % 4))
                default: p += [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: Int(random.next() % 4))
                }
            }
            if random.next() % 4 != 0 { p[1] = UInt8(truncatingIfNeeded: p.count - 2) }
            let expected = decoded(p)
            XCTAssertEqual(scanned(p), expected, "event \(p)")
            if expected == nil { left += 1 } else { taken += 1 }
        }
        XCTAssertGreaterThan(taken, 500, "enough mutations still decode")
        XCTAssertGreaterThan(left, 500, "enough mutations are malformed")
    }

    /// A small deterministic generator: the same mutations on every run.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
