import XCTest
import BLEFuzzTargets

/// Every fuzz target in smoke mode: a bounded number of deterministic pseudo-random inputs
/// (docs/FUZZING.md). A trap in the code under test crashes this process, which fails the run;
/// a broken invariant is collected by `FuzzCheck` and fails the test case with its message and
/// the first failing input in hex, to replay with `ble-fuzz TARGET FILE`.
final class FuzzSmokeTests: XCTestCase {
    /// Inputs per target: the whole suite stays within seconds in a debug build.
    static let iterations = 2_000

    private func smoke(_ name: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let result = FuzzSmoke.run(target: name, iterations: Self.iterations) else {
            XCTFail("no fuzz target named \(name)", file: file, line: line)
            return
        }
        XCTAssertEqual(result.inputs, Self.iterations, file: file, line: line)
        XCTAssertGreaterThan(result.seedInputs, 0, "\(name) has no golden seeds", file: file, line: line)
        if !result.violations.isEmpty {
            let hex = (result.firstFailingInput ?? []).map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
            XCTFail("\(name): \(result.violations.count) invariant violations; first failing input \(hex)\n"
                    + result.violations.messages.joined(separator: "\n"), file: file, line: line)
        }
    }

    func testH4Stream() { smoke("h4-stream") }
    func testHCIEvent() { smoke("hci-event") }
    func testHCICommand() { smoke("hci-command") }
    func testACLReassembly() { smoke("acl-reassembly") }
    func testBTSnoop() { smoke("btsnoop") }
    func testL2CAPSignaling() { smoke("l2cap-signaling") }
    func testLESignalingChannel() { smoke("le-signaling-channel") }
    func testCreditBasedSignaling() { smoke("credit-based-signaling") }
    func testKFrameReassembler() { smoke("k-frame-reassembler") }
    func testEnhancedCreditBasedSignaling() { smoke("enhanced-credit-based-signaling") }
    func testATTPDU() { smoke("att-pdu") }
    func testATTClientBearer() { smoke("att-client-bearer") }
    func testATTClientBearerSet() { smoke("att-client-bearer-set") }
    func testATTSignedWrite() { smoke("att-signed-write") }
    func testAdvertisingData() { smoke("advertising-data") }
    func testScanAggregator() { smoke("scan-aggregator") }
    func testExtendedReportAssembly() { smoke("extended-report-assembly") }
    func testSMPPDU() { smoke("smp-pdu") }
    func testSMPPairing() { smoke("smp-pairing") }
    func testHTTPRequest() { smoke("http-request") }
    func testGatewayCommand() { smoke("gateway-command") }

    /// A target added to the registry must get a test case above.
    func testEveryTargetHasASmokeTest() {
        let tested: Set<String> = [
            "h4-stream", "hci-event", "hci-command", "acl-reassembly", "btsnoop", "l2cap-signaling",
            "le-signaling-channel", "credit-based-signaling", "k-frame-reassembler",
            "enhanced-credit-based-signaling", "att-pdu", "att-client-bearer", "att-client-bearer-set", "att-signed-write",
            "advertising-data", "scan-aggregator", "extended-report-assembly", "http-request", "gateway-command",
            "smp-pdu", "smp-pairing",
        ]
        XCTAssertEqual(Set(FuzzTargets.names), tested)
    }

    /// The empty input and a few degenerate ones are valid programs for every target.
    func testDegenerateInputs() {
        for name in FuzzTargets.names {
            let violations = FuzzSmoke.replay(target: name, inputs: [[], [0], [0xFF], [UInt8](repeating: 0xFF, count: 300),
                                                                     [UInt8](repeating: 0, count: 300)])
            XCTAssertEqual(violations?.count, 0, "\(name): \(violations?.messages ?? [])")
        }
    }

    /// The reporting path itself: a violation inside a collecting run is counted (so the smoke
    /// tests above can fail), not fatal, and does not leak into the next run.
    func testViolationsAreCollectedNotFatal() {
        let found = FuzzCheck.collecting {
            FuzzCheck.require(true, "not recorded")
            FuzzCheck.require(false, "recorded")
            FuzzCheck.fail("also recorded")
        }
        XCTAssertEqual(found.count, 2)
        XCTAssertTrue(found.messages.first?.hasSuffix("recorded") ?? false)
        XCTAssertTrue(FuzzCheck.collecting {}.isEmpty)
    }

    /// Smoke runs are deterministic: the same seed gives the same inputs and results.
    func testSmokeRunsAreDeterministic() {
        let a = FuzzSmoke.run(target: "att-pdu", iterations: 300, seed: 7)
        let b = FuzzSmoke.run(target: "att-pdu", iterations: 300, seed: 7)
        XCTAssertEqual(a?.mutatedInputs, b?.mutatedInputs)
        XCTAssertEqual(a?.randomInputs, b?.randomInputs)
    }
}
