import XCTest
import BLEWire
@testable import BLEHost

/// `SMPPairingSettings.confirmsJustWorks`: the user accepts or declines a Just Works pairing
/// where Secure Connections would show a comparison (Core spec Vol 3 Part H §2.3.5.6.2 step 6)
/// and before legacy pairing's confirm value (§2.3.5.2), on either side.
final class SMPJustWorksConfirmationTests: XCTestCase {
    private func settings(sc: Bool, confirms: Bool) -> SMPPairingSettings {
        var s = SMPPairingSettings(ioCapability: .noInputNoOutput, secureConnections: sc)
        s.confirmsJustWorks = confirms
        return s
    }

    func testAnAcceptedJustWorksPairingCompletesAfterTheQuestionInBothKindsAndRoles() {
        for sc in [true, false] {
            for asking in [SMPPairing.Role.initiator, .responder] {
                var h = SMPPairingHarness(initiator: settings(sc: sc, confirms: asking == .initiator),
                                          responder: settings(sc: sc, confirms: asking == .responder))
                h.run()
                XCTAssertEqual(h.askedJustWorks, [asking], "sc=\(sc) \(asking)")
                guard case let .success(outcome)? = h.initiatorOutcome, case .success? = h.responderOutcome else {
                    return XCTFail("sc=\(sc) \(asking): \(String(describing: h.initiatorOutcome)) / \(String(describing: h.responderOutcome))")
                }
                XCTAssertEqual(outcome.model, .justWorks)
                XCTAssertEqual(outcome.secureConnections, sc)
                XCTAssertFalse(outcome.authenticated)
            }
        }
    }

    func testADeclinedJustWorksPairingFailsWithUnspecifiedReasonAndNoKey() {
        for sc in [true, false] {
            for asking in [SMPPairing.Role.initiator, .responder] {
                var h = SMPPairingHarness(initiator: settings(sc: sc, confirms: asking == .initiator),
                                          responder: settings(sc: sc, confirms: asking == .responder))
                if asking == .initiator { h.initiatorUser.acceptsJustWorks = false } else { h.responderUser.acceptsJustWorks = false }
                h.run()
                let (local, remote) = asking == .initiator ? (h.initiatorOutcome, h.responderOutcome) : (h.responderOutcome, h.initiatorOutcome)
                XCTAssertEqual(failureReason(local), .unspecifiedReason, "sc=\(sc) \(asking)")
                XCTAssertEqual(peerReason(remote), .unspecifiedReason, "sc=\(sc) \(asking)")
                XCTAssertNil(h.controllerKeys[.initiator], "sc=\(sc) \(asking): no key reaches the controller")
            }
        }
    }

    func testAComparisonAnswerDoesNotAnswerAJustWorksQuestion() {
        for sc in [true, false] {
            var h = SMPPairingHarness(initiator: settings(sc: sc, confirms: true), responder: settings(sc: sc, confirms: false))
            h.initiatorUser.silent = true
            h.run()
            XCTAssertEqual(h.askedJustWorks, [.initiator], "sc=\(sc)")
            XCTAssertNil(h.initiatorOutcome, "sc=\(sc): waiting for the user")
            XCTAssertEqual(h.initiator.numericComparisonConfirmed(true, now: .zero), [], "sc=\(sc)")
            let sent = h.initiator.justWorksConfirmed(true, now: .zero)
            XCTAssertTrue(sent.contains { if case .send = $0 { return true }; return false }, "sc=\(sc): the pairing goes on after the real answer: \(sent)")
        }
    }

    func testWithoutTheSettingNobodyIsAskedAndAComparisonIsNotAJustWorksQuestion() {
        var h = SMPPairingHarness(initiator: settings(sc: true, confirms: false), responder: settings(sc: true, confirms: false))
        h.run()
        XCTAssertEqual(h.askedJustWorks, [])
        guard case .success? = h.initiatorOutcome else { return XCTFail("\(String(describing: h.initiatorOutcome))") }

        var yesNo = SMPPairingSettings(ioCapability: .displayYesNo, mitm: true)
        yesNo.confirmsJustWorks = true
        var nc = SMPPairingHarness(initiator: yesNo, responder: yesNo)
        nc.run()
        XCTAssertEqual(nc.askedJustWorks, [], "numeric comparison asks its own question")
        XCTAssertEqual(Set(nc.compared.keys), [.initiator, .responder])
        // An answer to a question never asked changes nothing.
        var idle = SMPPairing(role: .initiator, settings: yesNo,
                              identity: SMPPairingHarness.identity(1, address: SMPPairingHarness.centralAddress),
                              initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        XCTAssertEqual(idle.justWorksConfirmed(true, now: .zero), [])
    }
}
