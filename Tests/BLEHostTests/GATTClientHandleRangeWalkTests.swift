import XCTest
import BLEWire
@testable import BLEHost

/// The edges of the handle-range walk every searching procedure shares (Core spec Vol 3 Part G
/// §4.4–§4.8.2 over Vol 3 Part F §3.4.3–§3.4.4): the top of the handle space, servers whose
/// answers do not advance, errors in the middle of a walk, and empty or short answers. Each runs
/// through a different procedure, so all four request kinds meet each edge at least once.
final class GATTClientHandleRangeWalkTests: XCTestCase {
    // MARK: The range ends at 0xFFFF

    func testReadByUUID_entryAtFFFFEndsWithoutAnotherRequest() {
        let outcome = runGATTClientScript(ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37)), [
            "C: 08 0100 ffff 372a",
            "S: 09 04 1000 aabb",
            "C: 08 1100 ffff 372a",
            "S: 09 04 ffff ccdd",  // the last handle there is: no request from 0x10000
        ])
        XCTAssertEqual(outcome.result, .success(.handleValues([
            ATTHandleValue(handle: 0x0010, value: [0xAA, 0xBB]),
            ATTHandleValue(handle: 0xFFFF, value: [0xCC, 0xDD]),
        ])))
    }

    func testDescriptors_rangeAtTheTopOfTheHandleSpace() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0xFFFE...0xFFFF), [
            "C: 04 feff ffff",
            "S: 05 01 feff 0229",
            "C: 04 ffff ffff",
            "S: 05 01 ffff 0129",
        ])
        XCTAssertEqual(outcome.result, .success(.descriptors([
            GATTDescriptor(handle: 0xFFFE, uuid: GATTUUID.clientCharacteristicConfiguration),
            GATTDescriptor(handle: 0xFFFF, uuid: GATTUUID.characteristicUserDescription),
        ])))
    }

    func testCharacteristics_lastOneInAServiceEndingAtFFFFEndsThere() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0xFFF0...0xFFFF), [
            "C: 08 f0ff ffff 0328",
            "S: 09 07 f1ff 02 f2ff 372a",
            "C: 08 f2ff ffff 0328",
            "S: 01 08 f2ff 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.characteristics([
            GATTCharacteristic(uuid: BluetoothUUID(0x2A37), declarationHandle: 0xFFF1, valueHandle: 0xFFF2,
                               properties: [.read], endHandle: 0xFFFF),
        ])))
    }

    func testServiceByUUID_groupEndingAtFFFFAfterAnEarlierOne() {
        let outcome = runGATTClientScript(DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180F)), [
            "C: 06 0100 ffff 0028 0f18",
            "S: 07 0100 0400 0500 ffff",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.services?.map(\.handleRange), [0x0001...0x0004, 0x0005...0xFFFF])
    }

    // MARK: Answers that do not advance the cursor

    func testCharacteristics_sameDeclarationAgainOnTheNextPageFails() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0001...0x0010), [
            "C: 08 0100 1000 0328",
            "S: 09 07 0200 02 0300 372a",
            "C: 08 0300 1000 0328",
            "S: 09 07 0200 02 0300 372a",  // answered as if the cursor were still at 0x0001
        ])
        assertProtocolViolation(outcome)
    }

    func testDescriptors_repeatedHandleInsideOneAnswerFails() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0010), [
            "C: 04 0400 1000",
            "S: 05 01 0400 0229 0400 0129",
        ])
        assertProtocolViolation(outcome)
    }

    func testDescriptors_handleBelowTheRequestedStartFails() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0010), [
            "C: 04 0400 1000",
            "S: 05 01 0300 0229",
        ])
        assertProtocolViolation(outcome)
    }

    func testDescriptors_handlePastTheRangeEndFails() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0006), [
            "C: 04 0400 0600",
            "S: 05 01 0700 0229",
        ])
        assertProtocolViolation(outcome)
    }

    func testServiceByUUID_groupEndBeforeItsStartIsMalformed() {
        let outcome = runGATTClientScript(DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180F)), [
            "C: 06 0100 ffff 0028 0f18",
            "S: 07 0500 0100",
        ])
        assertMalformed(outcome)
    }

    func testIncludedServices_declarationThatDoesNotAdvanceFailsAfterTheReadBack() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0001...0x0010), [
            "C: 08 0100 1000 0228",
            "S: 09 06 0300 3000 3500",
            "C: 0a 3000",
            "S: 0b \(gattScriptUUID128Hex)",
            "C: 08 0400 1000 0228",
            "S: 09 08 0300 2000 2500 0f18",
        ])
        assertProtocolViolation(outcome)
    }

    /// Entries are checked in the server's order, handles before value: the first fault wins.
    func testPrimaryServices_firstFaultInTheListIsReported() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 08 0100 0500 0d180000 0100 0500 0f180000",  // bad UUID, then a repeat
        ])
        assertMalformed(outcome)
    }

    /// The bearer never passes on an empty list (the decoder rejects it), but the walk must not
    /// rely on that: an answer with no entries would ask the same request again forever.
    func testAnAnswerWithNoEntriesFailsInsteadOfRepeatingTheRequest() {
        var walk = GATTHandleRangeWalk(CharacteristicDescriptors(), range: 0x0001...0xFFFF)
        XCTAssertEqual(walk.request, .findInformationRequest(startHandle: 0x0001, endHandle: 0xFFFF))
        guard case .failure(.protocolViolation) = walk.receive(.findInformationResponse([])) else {
            return XCTFail("an empty answer must fail the walk")
        }
    }

    func testAnswerAfterTheWalkFinishedIsRejected() {
        var walk = GATTHandleRangeWalk(CharacteristicDescriptors(), range: 0x0001...0x0002)
        let answer = ATTPDU.findInformationResponse([ATTHandleUUID(handle: 2, uuid: GATTUUID.clientCharacteristicConfiguration)])
        XCTAssertEqual(walk.receive(answer), .success(.finished))
        guard case .failure(.protocolViolation) = walk.receive(answer) else {
            return XCTFail("a finished walk takes no more entries")
        }
    }

    // MARK: An error in the middle of a walk

    func testPrimaryServices_errorOnTheSecondPageFailsWithThatError() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018",
            "C: 10 0600 ffff 0028",
            "S: 01 10 0600 05",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .insufficientAuthentication, handle: 6, request: .readByGroupTypeRequest)))
    }

    /// After entries, Attribute Not Found ends Read Using Characteristic UUID (§4.8.2); any
    /// other error fails it.
    func testReadByUUID_errorAfterEntries() {
        let procedure = ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37), range: 0x0001...0x0020)
        let firstPage = ["C: 08 0100 2000 372a", "S: 09 03 0300 01", "C: 08 0400 2000 372a"]
        XCTAssertEqual(runGATTClientScript(procedure, firstPage + ["S: 01 08 0400 0a"]).result,
                       .success(.handleValues([ATTHandleValue(handle: 3, value: [1])])))
        XCTAssertEqual(runGATTClientScript(procedure, firstPage + ["S: 01 08 0900 0f"]).result,
                       .failure(.att(code: .insufficientEncryption, handle: 9, request: .readByTypeRequest)))
    }

    func testIncludedServices_errorOnTheReadBackFails() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0001...0x0010), [
            "C: 08 0100 1000 0228",
            "S: 09 06 0300 3000 3500",
            "C: 0a 3000",
            "S: 01 0a 3000 02",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .readNotPermitted, handle: 0x30, request: .readRequest)))
    }

    func testDescriptors_errorResponseNamingAnotherRequestMidWalkIsUnexpected() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0010), [
            "C: 04 0400 1000",
            "S: 05 01 0400 0229",
            "C: 04 0500 1000",
            "S: 01 08 0500 0a",  // Attribute Not Found, but for a Read By Type
        ])
        XCTAssertEqual(outcome.result, .failure(.unexpectedResponse(expected: .findInformationResponse, got: .errorResponse)))
    }

    func testServiceByUUID_responseOfAnotherKindMidWalkIsUnexpected() {
        let outcome = runGATTClientScript(DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180F)), [
            "C: 06 0100 ffff 0028 0f18",
            "S: 07 0100 0400",
            "C: 06 0500 ffff 0028 0f18",
            "S: 05 01 0500 0229",
        ])
        XCTAssertEqual(outcome.result, .failure(.unexpectedResponse(expected: .findByTypeValueResponse, got: .findInformationResponse)))
    }

    // MARK: Empty and short answers

    func testEmptyListsAreMalformed() {
        let emptyAnswers: [(any GATTProcedure, String, String)] = [
            (DiscoverAllPrimaryServicesProcedure(), "C: 10 0100 ffff 0028", "S: 11 06"),
            (DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180F)), "C: 06 0100 ffff 0028 0f18", "S: 07"),
            (ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37)), "C: 08 0100 ffff 372a", "S: 09 04"),
            (DiscoverDescriptorsProcedure(range: 0x0004...0x0010), "C: 04 0400 1000", "S: 05 01"),
        ]
        for (procedure, request, answer) in emptyAnswers {
            assertMalformed(runGATTClientScript(AnyGATTProcedure(procedure), [request, answer]), "\(answer): ")
        }
    }

    func testTruncatedEntryIsMalformed() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018 0600",  // a second entry cut short
        ])
        assertMalformed(outcome)
    }

    /// A page with fewer entries than the MTU allows does not mean the range is done: only
    /// Attribute Not Found or the range end does (§4.4.1 ff.).
    func testShortPageDoesNotEndTheWalk() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), mtu: 247, [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018",
            "C: 10 0600 ffff 0028",
            "S: 11 06 0600 0900 0118",
            "C: 10 0a00 ffff 0028",
            "S: 01 10 0a00 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.services?.map(\.uuid), [BluetoothUUID(0x1800), BluetoothUUID(0x1801)])
    }

    private func assertProtocolViolation(_ outcome: GATTClientScriptOutcome, file: StaticString = #filePath, line: UInt = #line) {
        guard case .protocolViolation? = outcome.result?.gattError else {
            return XCTFail("expected a protocol violation, got \(String(describing: outcome.result))", file: file, line: line)
        }
    }

    private func assertMalformed(_ outcome: GATTClientScriptOutcome, _ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("\(context)expected a malformed response, got \(String(describing: outcome.result))", file: file, line: line)
        }
    }
}
