import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// Robustness of the ATT server: unsupported and malformed PDUs (Vol 3 Part F §3.3), every
/// prefix of every golden request, and random bytes. Never a trap, and exactly one answer to
/// every request.
final class GATTServerRobustnessTests: XCTestCase {
    /// Unknown requests get Request Not Supported with handle 0; unknown commands, Signed Write
    /// (no signing key) and PDUs of the client role are ignored.
    func testUnknownRequestAndCommand() {
        var h = GATTServerHarness()
        h.run([
            "C: 3f 0100", "S: 01 3f 0000 06",
            "C: 22 0100", "S: 01 22 0000 06",
            "C: 7f 01",
            "C: d2 1000 41 000102030405060708090a0b",
            "C: 0b 00",
            "C: 1b 1000 00",
            "C: 0a 1000", "S: 0b 68656c6c6f",
        ])
    }

    /// GATT/SR robustness: Execute Write on an empty queue just answers.
    func testExecuteOnEmptyQueue() {
        var h = GATTServerHarness()
        h.run(["C: 18 01", "S: 19", "C: 18 00", "S: 19", "C: 18 02", "S: 01 18 0000 04"])
    }

    /// Malformed requests get Invalid PDU with handle 0 (§3.3).
    func testMalformedRequestsInvalidPDU() {
        var h = GATTServerHarness()
        h.run([
            "C: 02 00", "S: 01 02 0000 04",
            "C: 04 0100", "S: 01 04 0000 04",
            "C: 04 0100 ffff 00", "S: 01 04 0000 04",
            "C: 06 0100 ff", "S: 01 06 0000 04",
            "C: 08 0100 ffff 00", "S: 01 08 0000 04",
            "C: 08 0100 ffff 000102", "S: 01 08 0000 04",
            "C: 0a 01", "S: 01 0a 0000 04",
            "C: 0a 0100 00", "S: 01 0a 0000 04",
            "C: 0c 0100 00", "S: 01 0c 0000 04",
            "C: 0e 0100", "S: 01 0e 0000 04",
            "C: 0e 0100 020003", "S: 01 0e 0000 04",
            "C: 10 0100 ffff 00", "S: 01 10 0000 04",
            "C: 12 01", "S: 01 12 0000 04",
            "C: 16 0100 00", "S: 01 16 0000 04",
            "C: 18", "S: 01 18 0000 04",
            "C: 20 0100", "S: 01 20 0000 04",
            // Malformed commands and confirmations are ignored.
            "C: 52 01",
            "C: d2 1000 00",
            "C: 1e 00",
        ])
    }

    static let goldenRequests: [[UInt8]] = [
        "02 0002", "04 0100 ffff", "06 0100 ffff 0028 a0aa", "08 0100 ffff 0328", "08 0100 ffff a8aa",
        "0a 1000", "0a 2100", "0c 1400 1600", "0e 1000 1400", "10 0100 ffff 0028", "12 1000 6869",
        "12 1700 0100", "16 1000 0000 6162", "18 01", "18 00", "20 1000 2100 1400", "52 1000 41", "1e",
        "d2 1000 41 000102030405060708090a0b",
    ].map { hexBytes($0) }

    /// Sends `pdu` and checks the answer count: one send for a request-type opcode (known or
    /// unknown), none for commands and everything else.
    private func check(_ h: inout GATTServerHarness, _ pdu: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        h.sent.removeAll()
        h.send(pdu)
        guard let first = pdu.first else { return XCTAssertEqual(h.sent.count, 0, file: file, line: line) }
        let opcode = ATTOpcode(first)
        let expectsAnswer = !h.server.isClosed && !opcode.isCommand && (opcode.kind == .request || opcode.kind == .unknown)
        XCTAssertEqual(h.sent.count, expectsAnswer ? 1 : 0, "answers to \(pdu.hexString)", file: file, line: line)
        for answer in h.sent where answer.count > h.server.mtu {
            XCTFail("answer \(answer.hexString) longer than ATT_MTU", file: file, line: line)
        }
    }

    func testEveryPrefixOfEveryGoldenRequest() {
        var h = GATTServerHarness()
        h.dynamicReads[0x21] = .success([1, 2, 3])
        for request in Self.goldenRequests {
            for length in 0...request.count {
                check(&h, Array(request.prefix(length)))
            }
        }
    }

    func testRandomBytesNeverTrap() {
        var rng = GATTServerTestRNG(seed: 0x5EED_6A77)
        let opcodes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E,
                                0x20, 0x52, 0xD2, 0x3F, 0x7F, 0xFF, 0x00]
        for round in 0..<4 {
            var h = GATTServerHarness()
            h.dynamicReads[0x21] = .success((0..<40).map { UInt8($0) })
            h.dynamicReads[0x23] = .failure(.unlikelyError)
            h.security = LinkSecurity(encrypted: round & 1 != 0, authenticated: round & 2 != 0, hasLongTermKey: true)
            for _ in 0..<2500 {
                let length = Int(rng.next() % 24)
                var pdu = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if !pdu.isEmpty && rng.next() % 4 != 0 { pdu[0] = opcodes[Int(rng.next() % UInt64(opcodes.count))] }
                // Keep handles mostly inside the database so deep paths run.
                if pdu.count >= 3 && rng.next() % 2 == 0 { pdu[1] = UInt8(rng.next() % 48); pdu[2] = 0 }
                check(&h, pdu)
                if rng.next() % 50 == 0 {
                    _ = h.notify(valueHandle: 0x16, value: pdu)
                    _ = h.indicate(valueHandle: 0x16, value: pdu, id: rng.next(), now: h.now)
                    _ = h.server.nextOutgoing()
                    h.absorb(h.server.expire(now: h.now))
                }
            }
        }
    }
}

/// The seeded generator the fuzz-style tests share (BLEWire's SplitMix64).
typealias GATTServerTestRNG = SplitMix64
