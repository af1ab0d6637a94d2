import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// The LE signaling channel as a PDU script: exact frames in, exact answers out.
final class L2CAPSignalingChannelTests: XCTestCase {
    typealias Command = LESignalingCommand
    let good = LESignalingCommand.ConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)

    // MARK: Central

    func testCentralAcceptsValidParameterUpdate() {
        var channel = LESignalingChannel()
        let actions = channel.receive(hexBytes("12 2A 0800 0600 0C00 0000 C800"), role: .central)
        XCTAssertEqual(actions, [.send(hexBytes("13 2A 0200 0000")), .updateConnectionParameters(good, identifier: 0x2A)])
    }

    func testCentralRejectsInvalidParameters() {
        var channel = LESignalingChannel()
        // Minimum above maximum.
        XCTAssertEqual(channel.receive(hexBytes("12 03 0800 0C00 0600 0000 C800"), role: .central), [.send(hexBytes("13 03 0200 0100"))])
        // Supervision timeout too short for the interval and latency.
        XCTAssertEqual(channel.receive(hexBytes("12 04 0800 0600 2800 0400 3200"), role: .central), [.send(hexBytes("13 04 0200 0100"))])
        // Latency 500.
        XCTAssertEqual(channel.receive(hexBytes("12 05 0800 0600 0C00 F401 800C"), role: .central), [.send(hexBytes("13 05 0200 0100"))])
    }

    func testCentralPolicyCanRejectEverything() {
        var channel = LESignalingChannel()
        channel.acceptsConnectionParameterUpdates = false
        XCTAssertEqual(channel.receive(hexBytes("12 01 0800 0600 0C00 0000 C800"), role: .central), [.send(hexBytes("13 01 0200 0100"))])
    }

    func testCentralIgnoresUnsolicitedResponses() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.receive(hexBytes("13 01 0200 0000"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("01 01 0200 0000"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("07 01 0400 4000 4100"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("15 01 0A00 4100 0001 6400 0500 0000"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("18 01 0A00 0000 0000 0000 0200 0000"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("1A 01 0200 0000"), role: .central), [])
    }

    // MARK: Either role

    func testUnknownCommandGetsRejectWithSameIdentifier() {
        var channel = LESignalingChannel()
        // Information Request is BR/EDR only.
        XCTAssertEqual(channel.receive(hexBytes("0A 07 0200 0200"), role: .central), [.send(hexBytes("01 07 0200 0000"))])
        XCTAssertEqual(channel.receive(hexBytes("FE 99 0000"), role: .peripheral), [.send(hexBytes("01 99 0200 0000"))])
    }

    func testMalformedCommandGetsReject() {
        var channel = LESignalingChannel()
        // Length field 8 with 7 data bytes.
        XCTAssertEqual(channel.receive(hexBytes("12 11 0800 0600 0C00 0000 C8"), role: .central), [.send(hexBytes("01 11 0200 0000"))])
        // Right length field, wrong size for the command.
        XCTAssertEqual(channel.receive(hexBytes("12 12 0600 0600 0C00 0000"), role: .central), [.send(hexBytes("01 12 0200 0000"))])
        // A header cut short still names its identifier.
        XCTAssertEqual(channel.receive(hexBytes("12 13 08"), role: .central), [.send(hexBytes("01 13 0200 0000"))])
        // Nothing to name: no answer.
        XCTAssertEqual(channel.receive(hexBytes("12"), role: .central), [])
        XCTAssertEqual(channel.receive([], role: .central), [])
        // A malformed reject or response is never answered.
        XCTAssertEqual(channel.receive(hexBytes("01 14 0300 0000 00"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("13 15 0100 00"), role: .peripheral), [])
    }

    func testIdentifierZeroIsIgnored() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.receive(hexBytes("12 00 0800 0600 0C00 0000 C800"), role: .central), [])
        XCTAssertEqual(channel.receive(hexBytes("0A 00 0200 0200"), role: .central), [])
    }

    func testOversizedFrameGetsMTUExceeded() {
        var channel = LESignalingChannel()
        let big = hexBytes("0A 21 1400") + [UInt8](repeating: 0, count: 20)   // 24 bytes > MTU_sig 23
        XCTAssertEqual(channel.receive(big, role: .central), [.send(hexBytes("01 21 0400 0100 1700"))])
        channel.signalingMTU = 64
        XCTAssertEqual(channel.receive(big, role: .central), [.send(hexBytes("01 21 0200 0000"))])
    }

    func testDisconnectionRequestForUnknownChannel() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.receive(hexBytes("06 08 0400 4000 4100"), role: .peripheral), [.send(hexBytes("01 08 0600 0200 4000 4100"))])
    }

    func testCreditBasedConnectionsRefused() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.receive(hexBytes("14 0B 0A00 8000 4000 0002 F700 0A00"), role: .central),
                       [.send(hexBytes("15 0B 0A00 0000 0000 0000 0000 0200"))])
        XCTAssertEqual(channel.receive(hexBytes("17 0C 0E00 2700 4000 4000 0200 4000 4100 4200"), role: .peripheral),
                       [.send(hexBytes("18 0C 0E00 0000 0000 0000 0200 0000 0000 0000"))])
        XCTAssertEqual(channel.receive(hexBytes("16 0D 0400 4000 0100"), role: .central), [], "credits for no channel are ignored")
    }

    // MARK: Peripheral

    func testPeripheralRejectsParameterUpdateRequest() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.receive(hexBytes("12 05 0800 0600 0C00 0000 C800"), role: .peripheral), [.send(hexBytes("01 05 0200 0000"))])
    }

    func testPeripheralRequestAndAcceptedResponse() {
        var channel = LESignalingChannel()
        XCTAssertEqual(channel.requestConnectionParameterUpdate(good), hexBytes("12 01 0800 0600 0C00 0000 C800"))
        XCTAssertEqual(channel.pendingParameterUpdateIdentifier, 1)
        XCTAssertEqual(channel.receive(hexBytes("13 02 0200 0000"), role: .peripheral), [], "another identifier")
        XCTAssertEqual(channel.receive(hexBytes("13 01 0200 0000"), role: .peripheral), [.connectionParameterUpdateResult(accepted: true)])
        XCTAssertNil(channel.pendingParameterUpdateIdentifier)
        XCTAssertEqual(channel.receive(hexBytes("13 01 0200 0000"), role: .peripheral), [], "answered once only")
    }

    func testPeripheralRequestRejected() {
        var channel = LESignalingChannel()
        _ = channel.requestConnectionParameterUpdate(good)
        let second = channel.requestConnectionParameterUpdate(good)
        XCTAssertEqual(second[1], 2)
        XCTAssertEqual(channel.receive(hexBytes("13 01 0200 0100"), role: .peripheral), [], "superseded request")
        XCTAssertEqual(channel.receive(hexBytes("13 02 0200 0100"), role: .peripheral), [.connectionParameterUpdateResult(accepted: false)])
    }

    func testPeripheralRequestAnsweredByCommandReject() {
        var channel = LESignalingChannel()
        _ = channel.requestConnectionParameterUpdate(good)
        XCTAssertEqual(channel.receive(hexBytes("01 01 0200 0000"), role: .peripheral), [.connectionParameterUpdateResult(accepted: false)])
    }

    func testCancelPendingRequest() {
        var channel = LESignalingChannel()
        _ = channel.requestConnectionParameterUpdate(good)
        channel.cancelPendingRequest()
        XCTAssertEqual(channel.receive(hexBytes("13 01 0200 0000"), role: .peripheral), [])
    }

    func testIdentifiersWrapAndSkipZero() {
        var channel = LESignalingChannel()
        var seen: [UInt8] = []
        for _ in 0..<300 { seen.append(channel.nextIdentifier()) }
        XCTAssertFalse(seen.contains(0))
        XCTAssertEqual(seen[0], 1)
        XCTAssertEqual(seen[254], 255)
        XCTAssertEqual(seen[255], 1)
    }

    // MARK: Robustness

    func testArbitraryInputNeverTraps() {
        var channel = LESignalingChannel()
        var state: UInt32 = 0x1234_5678
        func next() -> UInt8 {
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        for _ in 0..<20_000 {
            let count = Int(next() % 30)
            var bytes = (0..<count).map { _ in next() }
            if count >= 4, next() & 1 == 0 {
                // Often make the length field consistent so decoding goes deeper.
                bytes[0] = [0x01, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18][Int(next() % 10)]
                bytes[2] = UInt8(count - 4)
                bytes[3] = 0
            }
            let isReply = bytes.first.map(LESignalingChannel.replyCodes.contains) ?? false
            for role in [LESignalingChannel.Role.central, .peripheral] {
                for action in channel.receive(bytes, role: role) {
                    if case let .send(reply) = action {
                        // Everything we send decodes, and a reject or response is never answered.
                        XCTAssertNoThrow(try Command(pdu: reply))
                        XCTAssertFalse(isReply, "answered \(bytes.hexString) with \(reply.hexString)")
                        XCTAssertEqual(reply.count >= 2 ? reply[1] : nil, bytes.count >= 2 ? bytes[1] : nil, "same identifier")
                    }
                }
            }
        }
    }
}
