import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// The ATT client bearer: GAN/GAI, the transaction model (Core spec Vol 3 Part F §3.3.2, §3.3.3),
/// cancellation, and robustness against malformed and misdirected PDUs.
final class GATTClientBearerTests: XCTestCase {
    // MARK: GAN / GAI (Vol 3 Part G §4.10, §4.11)

    func testGAN_CL_BV_01_C_notificationsDeliveredWhileARequestIsOutstanding() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [.send(hexBytes("0a 0300"))])
        XCTAssertEqual(bearer.receive(hexBytes("1b 0500 aabb"), now: .seconds(1)),
                       [.notification(handle: 5, value: [0xAA, 0xBB])])
        XCTAssertEqual(bearer.receive(hexBytes("23 0500 0100 aa 0600 0200 bbcc"), now: .seconds(1)), [
            .notification(handle: 5, value: [0xAA]),
            .notification(handle: 6, value: [0xBB, 0xCC]),
        ])
        XCTAssertTrue(bearer.hasOutstandingRequest)
        XCTAssertEqual(bearer.receive(hexBytes("0b 07"), now: .seconds(2)), [.complete(id: 1, .success(.value([7])))])
    }

    func testGAI_CL_BV_01_C_indicationIsConfirmedImmediately() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.receive(hexBytes("1d 0500 01"), now: .zero),
                       [.indication(handle: 5, value: [1]), .send([0x1E])])
        // Also while a request is outstanding: the confirmation is not a request.
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        XCTAssertEqual(bearer.receive(hexBytes("1d 0900 0100ffff"), now: .seconds(1)),
                       [.indication(handle: 9, value: [0x01, 0x00, 0xFF, 0xFF]), .send([0x1E])])
        XCTAssertTrue(bearer.hasOutstandingRequest)
    }

    func testMalformedNotificationsAndIndicationsAreDropped() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.receive(hexBytes("1b 05"), now: .zero), [])
        XCTAssertEqual(bearer.receive(hexBytes("1d 05"), now: .zero), [])
        XCTAssertEqual(bearer.receive(hexBytes("23 0500 0500 aa"), now: .zero), [])
        XCTAssertEqual(bearer.receive([], now: .zero), [])
    }

    // MARK: One outstanding request (Vol 3 Part F §3.3.2)

    func testSecondSubmitIsQueuedUntilTheFirstResponse() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [.send(hexBytes("0a 0300"))])
        XCTAssertEqual(bearer.submit(WriteProcedure(handle: 4, value: [9]), id: 2, now: .zero), [])
        XCTAssertEqual(bearer.queuedCount, 1)
        XCTAssertEqual(bearer.receive(hexBytes("0b 01"), now: .seconds(1)), [
            .complete(id: 1, .success(.value([1]))),
            .send(hexBytes("12 0400 09")),
        ])
        XCTAssertEqual(bearer.receive(hexBytes("13"), now: .seconds(2)), [.complete(id: 2, .success(.none))])
        XCTAssertFalse(bearer.hasOutstandingRequest)
        XCTAssertNil(bearer.nextDeadline)
    }

    func testProceduresThatEndWithoutSendingLetTheNextStart() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = bearer.submit(ReadMultipleProcedure(handles: [1]), id: 2, now: .zero)  // fails at start
        _ = bearer.submit(ReadProcedure(handle: 4), id: 3, now: .zero)
        let actions = bearer.receive(hexBytes("0b"), now: .seconds(1))
        XCTAssertEqual(actions.count, 3)
        XCTAssertEqual(actions.first, .complete(id: 1, .success(.value([]))))
        guard case .complete(2, .failure(.invalidArgument))? = actions.dropFirst().first else { return XCTFail("\(actions)") }
        XCTAssertEqual(actions.last, .send(hexBytes("0a 0400")))
    }

    func testErrorResponseForAnotherRequestIsAProtocolError() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 01 12 0300 01"])
        XCTAssertEqual(outcome.result, .failure(.unexpectedResponse(expected: .readResponse, got: .errorResponse)))
    }

    func testResponseWithAnotherOpcodeIsAProtocolError() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 13"])
        XCTAssertEqual(outcome.result, .failure(.unexpectedResponse(expected: .readResponse, got: .writeResponse)))
        XCTAssertEqual(outcome.result?.gattError?.description,
                       "unexpected ATT response: expected Read Response (0x0B), got Write Response (0x13)")
    }

    func testUnsolicitedResponseIsDropped() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.receive(hexBytes("0b 0102"), now: .zero), [])
        XCTAssertEqual(bearer.receive(hexBytes("01 0a 0300 01"), now: .zero), [])
    }

    func testPeerRequestsGoToTheServerRole() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        for hex in ["0a 0100", "02 1700", "52 0300 01", "1e", "3f 01"] {
            XCTAssertEqual(bearer.receive(hexBytes(hex), now: .zero), [.peerRequest(hexBytes(hex))], hex)
        }
        // An unknown command is ignored (§3.3).
        XCTAssertEqual(bearer.receive(hexBytes("7f 01"), now: .zero), [])
        XCTAssertTrue(bearer.hasOutstandingRequest)
    }

    // MARK: Transaction timeout (Vol 3 Part F §3.3.3)

    func testTransactionTimeoutClosesTheBearerAndFailsQueuedProcedures() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .seconds(5))
        _ = bearer.submit(ReadProcedure(handle: 4), id: 2, now: .seconds(6))
        XCTAssertEqual(bearer.nextDeadline, .seconds(35))
        XCTAssertEqual(bearer.expire(now: .seconds(35) - .milliseconds(1)), [])
        XCTAssertEqual(bearer.expire(now: .seconds(35)), [
            .complete(id: 1, .failure(.timeout)),
            .complete(id: 2, .failure(.timeout)),
            .closeBearer(.transactionTimeout),
        ])
        XCTAssertTrue(bearer.isClosed)
        XCTAssertNil(bearer.nextDeadline)
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 5), id: 3, now: .seconds(36)), [.complete(id: 3, .failure(.bearerClosed))])
        XCTAssertEqual(bearer.receive(hexBytes("0b 01"), now: .seconds(36)), [])
        XCTAssertEqual(bearer.receive(hexBytes("1d 0500 01"), now: .seconds(36)), [])
        XCTAssertThrowsError(try bearer.writeWithoutResponse(handle: 3, value: [1]))
        XCTAssertEqual(bearer.expire(now: .seconds(100)), [])
    }

    func testDeadlineRestartsWithEachRequest() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(DiscoverAllPrimaryServicesProcedure(), id: 1, now: .zero)
        XCTAssertEqual(bearer.nextDeadline, .seconds(30))
        XCTAssertEqual(bearer.receive(hexBytes("11 06 0100 0500 0018"), now: .seconds(20)), [.send(hexBytes("10 0600 ffff 0028"))])
        XCTAssertEqual(bearer.nextDeadline, .seconds(50))
        XCTAssertEqual(bearer.expire(now: .seconds(31)), [])
        XCTAssertEqual(bearer.receive(hexBytes("01 10 0600 0a"), now: .seconds(40)),
                       [.complete(id: 1, .success(.services([GATTService(uuid: BluetoothUUID(0x1800), handleRange: 1...5)])))])
        XCTAssertNil(bearer.nextDeadline)
    }

    func testConfigurableTransactionTimeout() {
        var bearer = ATTClientBearer(transactionTimeout: .seconds(2))
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .seconds(1))
        XCTAssertEqual(bearer.nextDeadline, .seconds(3))
        XCTAssertEqual(bearer.expire(now: .seconds(3)), [.complete(id: 1, .failure(.timeout)), .closeBearer(.transactionTimeout)])
        XCTAssertEqual(bearer.sendCommand(.writeCommand(handle: 3, value: [1])), [])
    }

    func testMTUAgreedByTheLocalServer() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.peerExchangedMTU(clientMTU: 100, serverMTU: 517), [.mtuChanged(100)])
        XCTAssertEqual(bearer.mtu, 100)
        XCTAssertEqual(bearer.peerExchangedMTU(clientMTU: 100, serverMTU: 517), [])
        XCTAssertEqual(bearer.peerExchangedMTU(clientMTU: 10, serverMTU: 517), [.mtuChanged(23)])
    }

    func testCloseFailsEverythingWithBearerClosed() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = bearer.submit(ReadProcedure(handle: 4), id: 2, now: .zero)
        XCTAssertEqual(bearer.close(), [.complete(id: 1, .failure(.bearerClosed)), .complete(id: 2, .failure(.bearerClosed))])
        XCTAssertEqual(bearer.close(), [])
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 5), id: 3, now: .zero), [.complete(id: 3, .failure(.bearerClosed))])
    }

    // MARK: Cancellation

    func testCancelQueuedProcedure() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = bearer.submit(ReadProcedure(handle: 4), id: 2, now: .zero)
        XCTAssertEqual(bearer.cancel(id: 2), [.complete(id: 2, .failure(.cancelled))])
        XCTAssertEqual(bearer.cancel(id: 2), [])
        XCTAssertEqual(bearer.receive(hexBytes("0b 01"), now: .seconds(1)), [.complete(id: 1, .success(.value([1])))])
        XCTAssertFalse(bearer.hasOutstandingRequest)
    }

    func testCancelInFlightProcedureDropsItsResultAndKeepsTheSlotUntilAnswered() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(DiscoverAllPrimaryServicesProcedure(), id: 1, now: .zero)
        _ = bearer.submit(ReadProcedure(handle: 4), id: 2, now: .zero)
        XCTAssertEqual(bearer.cancel(id: 1), [.complete(id: 1, .failure(.cancelled))])
        XCTAssertTrue(bearer.hasOutstandingRequest)  // ATT cannot abort a request
        // The answer is swallowed (no continuation of the discovery) and the next one starts.
        XCTAssertEqual(bearer.receive(hexBytes("11 06 0100 0500 0018"), now: .seconds(1)), [.send(hexBytes("0a 0400"))])
        XCTAssertEqual(bearer.receive(hexBytes("0b 02"), now: .seconds(2)), [.complete(id: 2, .success(.value([2])))])
    }

    func testCancelledInFlightProcedureStillTimesOutTheBearerWithoutReportingAgain() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = bearer.cancel(id: 1)
        XCTAssertEqual(bearer.expire(now: .seconds(30)), [.closeBearer(.transactionTimeout)])
    }

    func testCancelInFlightLongWriteSendsExecuteCancel() {
        var bearer = ATTClientBearer()
        let value = [UInt8](repeating: 7, count: 40)
        XCTAssertEqual(bearer.submit(LongWriteProcedure(handle: 3, value: value), id: 1, now: .zero),
                       [.send(hexBytes("16 0300 0000") + Array(value[0..<18]))])
        _ = bearer.submit(ReadProcedure(handle: 4), id: 2, now: .zero)
        XCTAssertEqual(bearer.cancel(id: 1), [.complete(id: 1, .failure(.cancelled))])
        // The prepare's echo arrives: instead of the next part, the queue is cancelled.
        XCTAssertEqual(bearer.receive(hexBytes("17 0300 0000") + Array(value[0..<18]), now: .seconds(1)),
                       [.send(hexBytes("18 00"))])
        XCTAssertEqual(bearer.receive(hexBytes("19"), now: .seconds(2)), [.send(hexBytes("0a 0400"))])
        XCTAssertEqual(bearer.receive(hexBytes("0b"), now: .seconds(3)), [.complete(id: 2, .success(.value([])))])
    }

    // MARK: Malformed responses never trap

    /// Golden responses, each with the procedure that would receive it.
    private var goldenResponses: [(AnyGATTProcedure, String)] {
        [
            (AnyGATTProcedure(ExchangeMTUProcedure()), "03 f700"),
            (AnyGATTProcedure(DiscoverAllPrimaryServicesProcedure()), "11 06 0100 0500 0018 0600 0900 0118"),
            (AnyGATTProcedure(DiscoverAllPrimaryServicesProcedure()), "11 14 0a00 1000 \(gattScriptUUID128Hex)"),
            (AnyGATTProcedure(DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180D))), "07 0100 0500 2000 2f00"),
            (AnyGATTProcedure(FindIncludedServicesProcedure(range: 1...0x10)), "09 08 0200 2000 2500 0f18"),
            (AnyGATTProcedure(DiscoverCharacteristicsProcedure(range: 1...0x10)), "09 07 0200 1a 0300 372a 0400 02 0500 382a"),
            (AnyGATTProcedure(DiscoverCharacteristicsProcedure(range: 1...0x10)), "09 15 0600 10 0700 \(gattScriptUUID128Hex)"),
            (AnyGATTProcedure(DiscoverDescriptorsProcedure(range: 4...0x10)), "05 01 0400 0229 0500 0129"),
            (AnyGATTProcedure(DiscoverDescriptorsProcedure(range: 4...0x10)), "05 02 0600 \(gattScriptUUID128Hex)"),
            (AnyGATTProcedure(ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37))), "09 04 0300 5a00 0700 5b00"),
            (AnyGATTProcedure(ReadMultipleVariableProcedure(handles: [3, 5])), "21 0200 0102 0100 03"),
            (AnyGATTProcedure(LongWriteProcedure(handle: 3, value: [1, 2, 3])), "17 0300 0000 010203"),
            (AnyGATTProcedure(ReadProcedure(handle: 3)), "01 0a 0300 02"),
        ]
    }

    func testEveryPrefixOfAGoldenResponseIsHandledWithoutTrapping() {
        for (procedure, hex) in goldenResponses {
            let golden = hexBytes(hex)
            for length in 0...golden.count {
                let prefix = Array(golden.prefix(length))
                var bearer = ATTClientBearer()
                _ = bearer.submit(procedure, id: 1, now: .zero)
                let actions = bearer.receive(prefix, now: .seconds(1))
                let decoded = try? ATTPDU.decode(prefix)
                if length == 0 {
                    XCTAssertEqual(actions, [], "empty input")
                } else if decoded == nil {
                    // The answer was ours but malformed: the procedure fails, or (a prepared
                    // write) cancels its queue first.
                    let failedMalformed = actions.contains {
                        if case .complete(1, .failure(.malformedResponse)) = $0 { return true }
                        return false
                    }
                    XCTAssertTrue(failedMalformed || actions == [.send(hexBytes("18 00"))],
                                  "\(prefix.hexString): \(actions)")
                }
            }
        }
    }

    func testRandomBytesNeverTrapTheDecoderOrTheBearer() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return seed >> 33
        }
        let procedures = goldenResponses.map(\.0)
        for round in 0..<3000 {
            let length = Int(next() % 30)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            // Bias the opcode towards ones the client reacts to.
            if !bytes.isEmpty, round % 2 == 0 {
                let opcodes: [UInt8] = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23]
                bytes[0] = opcodes[Int(next() % UInt64(opcodes.count))]
            }
            if let pdu = try? ATTPDU.decode(bytes) {
                XCTAssertEqual(try? ATTPDU.decode(pdu.encode()), pdu, bytes.hexString)
            }
            var bearer = ATTClientBearer()
            _ = bearer.submit(procedures[round % procedures.count], id: 1, now: .zero)
            _ = bearer.receive(bytes, now: .seconds(1))
            _ = bearer.receive(bytes, now: .seconds(2))
        }
    }
}
