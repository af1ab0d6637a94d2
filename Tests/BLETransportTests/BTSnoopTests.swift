import BLERuntime
import Foundation
import XCTest
import BLEHCI
@testable import BLETransport
import BLETestSupport

final class BTSnoopTests: XCTestCase {
    func testFileHeaderGolden() {
        XCTAssertEqual(BTSnoop.fileHeader, hexBytes("6274736e6f6f7000 00000001 000003ea"))
    }

    func testRecordGolden() {
        // HCI Reset sent at the Unix epoch: flags 2 (command, host→controller).
        XCTAssertEqual(BTSnoop.record(frame: Sample.reset, direction: .sent,
                                      timestamp: BTSnoop.timestamp(unixMicroseconds: 0)),
                       hexBytes("00000004 00000004 00000002 00000000 00dcddb30f2f8000 01030c00"))
        // Its Command Complete one second later: flags 3 (event, controller→host).
        XCTAssertEqual(BTSnoop.record(frame: Sample.resetComplete, direction: .received,
                                      timestamp: BTSnoop.timestamp(unixMicroseconds: 1_000_000)),
                       hexBytes("00000007 00000007 00000003 00000000 00dcddb30f3ec240 040e0401030c00"))
        XCTAssertEqual(BTSnoop.flags(for: .acl, direction: .sent), 0)
        XCTAssertEqual(BTSnoop.flags(for: .acl, direction: .received), 1)
        XCTAssertEqual(BTSnoop.flags(for: .iso, direction: .received), 1)
        XCTAssertEqual(BTSnoop.flags(for: .event, direction: .received), 3)
    }

    func testEpochOffset() {
        // The constant btmon, Android and Wireshark use: 719_540 whole days of microseconds.
        XCTAssertEqual(BTSnoop.epochOffsetMicroseconds, 62_168_256_000_000_000)
        XCTAssertEqual(BTSnoop.epochOffsetMicroseconds % (86_400 * 1_000_000), 0)
        XCTAssertEqual(BTSnoop.timestamp(unixMicroseconds: 5), 0x00dc_ddb3_0f2f_8005)
    }

    func testParseRoundTrip() throws {
        var file = BTSnoop.fileHeader
        var expected: [(H4Frame, BTSnoop.Direction, Int64)] = []
        for (i, f) in Sample.all.enumerated() {
            let dir: BTSnoop.Direction = f.type == .event ? .received : .sent
            let t = 1_700_000_000_000_000 + Int64(i) * 1250
            file += BTSnoop.record(frame: f, direction: dir, timestamp: BTSnoop.timestamp(unixMicroseconds: t))
            expected.append((f, dir, t))
        }
        let records = try BTSnoop.parse(file)
        XCTAssertEqual(records.count, expected.count)
        for (r, (f, dir, t)) in zip(records, expected) {
            XCTAssertEqual(try r.frame(), f)
            XCTAssertEqual(r.direction, dir)
            XCTAssertEqual(r.unixMicroseconds, t)
            XCTAssertEqual(r.isCommandOrEvent, f.type == .command || f.type == .event)
            XCTAssertEqual(r.originalLength, UInt32(f.bytes.count))
            XCTAssertEqual(r.cumulativeDrops, 0)
        }
        XCTAssertEqual(try BTSnoop.parse(BTSnoop.fileHeader), [])
    }

    func testParseRejectsBadInput() {
        let good = BTSnoop.fileHeader + BTSnoop.record(frame: Sample.reset, direction: .sent, timestamp: 0)
        XCTAssertThrowsError(try BTSnoop.parse([]))
        XCTAssertThrowsError(try BTSnoop.parse(Array("btsnoox".utf8) + [0] + Array(good[8...])))
        var otherLink = good
        otherLink[15] = 0xE9 // datalink 1001 (HCI unencapsulated)
        XCTAssertThrowsError(try BTSnoop.parse(otherLink))
        for cut in 1..<(good.count - 16) {
            XCTAssertThrowsError(try BTSnoop.parse(Array(good.dropLast(cut))), "cut \(cut)")
        }
    }

    func testWriterAndCapturingTransport() async throws {
        let path = tempPath("capture.btsnoop")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clockValue = SharedValue<Int64>(1_000)
        let writer = try BTSnoopWriter(path: path) {
            clockValue.withLock { v in v += 1; return v }
        }
        let (hostEnd, controller) = InMemoryTransport.pair()
        let host = CapturingTransport(wrapping: hostEnd, sink: writer)
        XCTAssertTrue(host.description.contains(path))

        try await host.send(Sample.reset)
        let atController = try await nextFrames(controller, 1)
        XCTAssertEqual(atController, [Sample.reset])
        try await controller.send(Sample.resetComplete)
        let atHost = try await nextFrames(host, 1)
        XCTAssertEqual(atHost, [Sample.resetComplete])
        await host.close()
        await host.close()
        writer.close()
        XCTAssertThrowsError(try writer.write(Sample.reset, direction: .sent))

        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let records = try BTSnoop.parse(data)
        XCTAssertEqual(records.map { try? $0.frame() }, [Sample.reset, Sample.resetComplete])
        XCTAssertEqual(records.map(\.direction), [.sent, .received])
        XCTAssertEqual(records.map(\.unixMicroseconds), [1_001, 1_002])
        XCTAssertNil(writer.lastError)
    }

    func testConcurrentWritersKeepRecordsWhole() async throws {
        let path = tempPath("concurrent.btsnoop")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try BTSnoopWriter(path: path)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for i in 0..<100 {
                        try? writer.write(H4Frame(type: .acl, payload: [UInt8(t), UInt8(i), 1, 0, 0xAA]), direction: .received)
                    }
                }
            }
        }
        writer.close()
        let records = try BTSnoop.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
        XCTAssertEqual(records.count, 400)
    }

    /// Wireshark must dissect what we write: no malformed packets, the right packet count.
    func testTsharkDissectsCapture() throws {
        guard let tshark = findExecutable("tshark") else { throw XCTSkip("tshark is not installed") }
        let path = tempPath("tshark.btsnoop")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try BTSnoopWriter(path: path)
        try writer.write(Sample.reset, direction: .sent)
        try writer.write(Sample.resetComplete, direction: .received)
        try writer.write(Sample.advertisingReport, direction: .received)
        try writer.write(Sample.attReadRequest, direction: .sent)
        writer.close()

        let (status, malformed, err) = try runTool(tshark, ["-r", path, "-Y", "_ws.malformed"])
        XCTAssertEqual(status, 0, err)
        XCTAssertEqual(malformed.trimmingCharacters(in: .whitespacesAndNewlines), "", "malformed packets:\n\(malformed)")

        let (status2, listing, err2) = try runTool(tshark, ["-r", path])
        XCTAssertEqual(status2, 0, err2)
        let lines = listing.split(separator: "\n")
        XCTAssertEqual(lines.count, 4, listing)
        XCTAssertTrue(listing.contains("Reset"), listing)
        XCTAssertTrue(listing.contains("Read Request"), listing)
        XCTAssertTrue(listing.contains("Advertising Report"), listing)
    }
}
