@testable import BLEHCI
import XCTest

/// Number Of Completed Packets (Core Vol 4 Part E §7.7.19) is encoded straight into its packet,
/// once per batch of ACL packets a controller sent: the bytes must be those of the general
/// encoder (event code, parameter length, then `parameters`), for every number of entries.
final class CompletedPacketsEncodingTests: XCTestCase {
    /// What `encode()` gives any event: code, length, and the parameters cut to 255 bytes.
    private func general(_ event: HCIEvent) -> [UInt8] {
        let params = event.parameters.prefix(255)
        return [event.code, UInt8(params.count)] + params
    }

    private func entries(_ n: Int) -> [CompletedPackets] {
        (0..<n).map { CompletedPackets(handle: UInt16(0x0E00 + $0), count: UInt16(0x0100 * $0 + 1)) }
    }

    func testTheDirectEncodingIsTheGeneralOneForEveryCountThatFits() throws {
        for n in [0, 1, 2, 3, 62, 63] {
            let event = HCIEvent.numberOfCompletedPackets(entries(n))
            XCTAssertEqual(event.encode(), general(event), "\(n) entries")
            XCTAssertEqual(try HCIEvent.decode(event.encode()), event, "\(n) entries decode back")
        }
        XCTAssertEqual(HCIEvent.numberOfCompletedPackets([CompletedPackets(handle: 0x0040, count: 0x0203)]).encode(),
                       [0x13, 0x05, 0x01, 0x40, 0x00, 0x03, 0x02])
    }

    /// The one-entry packet the virtual radio sends for a batch's credits on one handle.
    func testTheOneEntryEncodingIsTheEventsEncoding() throws {
        for entry in [CompletedPackets(handle: 0x0040, count: 1), CompletedPackets(handle: 0x0EFF, count: 0xFFFF), CompletedPackets(handle: 0, count: 0x0102)] {
            let event = HCIEvent.numberOfCompletedPackets([entry])
            XCTAssertEqual(HCIEvent.encodeCompletedPackets(entry), event.encode())
            XCTAssertEqual(try HCIEvent.decode(HCIEvent.encodeCompletedPackets(entry)), event)
        }
    }

    /// Review finding F3: 64 entries made a 257-byte parameter list under a length byte of 1,
    /// which the host rejects as malformed, losing every credit in it.
    func testMoreEntriesThanOneEventCarriesGoInSeveralEventsThatDecode() throws {
        for n in [64, 126, 127, 200] {
            let all = entries(n)
            let events = HCIEvent.numberOfCompletedPacketsEvents(all)
            XCTAssertEqual(events.count, (n + 62) / 63, "\(n) entries")
            var decoded: [CompletedPackets] = []
            for e in events {
                let bytes = e.encode()
                XCTAssertEqual(Int(bytes[1]), bytes.count - 2, "the length byte is true")
                guard case let .numberOfCompletedPackets(got) = try HCIEvent.decode(bytes) else { return XCTFail("not decoded back") }
                decoded += got
            }
            XCTAssertEqual(decoded, all, "every entry once, in order")
        }
        XCTAssertEqual(HCIEvent.numberOfCompletedPacketsEvents([]), [])
        XCTAssertEqual(HCIEvent.numberOfCompletedPacketsEvents(entries(2)), [.numberOfCompletedPackets(entries(2))])
    }

    func testAnEventOfTooManyEntriesEncodesOnlyWhatItsLengthDescribes() throws {
        let bytes = HCIEvent.numberOfCompletedPackets(entries(64)).encode()
        XCTAssertEqual(Int(bytes[1]), bytes.count - 2)
        XCTAssertEqual(try HCIEvent.decode(bytes), .numberOfCompletedPackets(entries(63)))
    }
}
