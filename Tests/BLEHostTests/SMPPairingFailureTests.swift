import XCTest
import BLECrypto
import BLEWire
import BLETestSupport
@testable import BLEHost

/// Every way a pairing must fail, and the Pairing Failed reason each owes the peer (Core spec
/// Vol 3 Part H §3.5.5), through two Security Managers back to back.
final class SMPPairingFailureTests: XCTestCase {
    private let keyboard = SMPPairingSettings(ioCapability: .keyboardOnly, mitm: true)
    private let display = SMPPairingSettings(ioCapability: .displayOnly, mitm: true)

    func testAWrongPasskeyFailsWithConfirmValueFailedInBothKinds() {
        for sc in [false, true] {
            var initiator = keyboard
            initiator.secureConnections = sc
            var h = SMPPairingHarness(initiator: initiator, responder: display)
            h.initiatorUser.typedPasskey = 999_999
            h.run()
            if h.displayed[.responder] == 999_999 { continue }  // one in a million: the guess was right
            XCTAssertEqual(failureReason(h.responderOutcome) ?? failureReason(h.initiatorOutcome), .confirmValueFailed, "sc=\(sc)")
            XCTAssertNil(h.controllerKeys[.initiator], "no key reaches the controller")
            if sc {
                // The wrong bit is found in some round of 20, never after all of them.
                let confirms = h.transcript.filter { $0.pdu.first == SMPCode.pairingConfirm.rawValue }.count
                XCTAssertLessThanOrEqual(confirms, 40)
            }
        }
    }

    func testARejectedNumericComparisonFailsWithNumericComparisonFailed() {
        let yesNo = SMPPairingSettings(ioCapability: .displayYesNo, mitm: true)
        for rejecting in [SMPPairing.Role.initiator, .responder] {
            var h = SMPPairingHarness(initiator: yesNo, responder: yesNo)
            if rejecting == .initiator { h.initiatorUser.confirms = false } else { h.responderUser.confirms = false }
            h.run()
            let (local, remote) = rejecting == .initiator ? (h.initiatorOutcome, h.responderOutcome) : (h.responderOutcome, h.initiatorOutcome)
            XCTAssertEqual(failureReason(local), .numericComparisonFailed, "\(rejecting)")
            XCTAssertEqual(peerReason(remote), .numericComparisonFailed, "\(rejecting)")
            XCTAssertNil(h.controllerKeys[.initiator])
        }
    }

    func testAUserWhoGivesUpOnThePasskeyFailsWithPasskeyEntryFailed() {
        var h = SMPPairingHarness(initiator: keyboard, responder: display)
        h.run()
        var i = h.initiator
        _ = i.passkeyEntered(nil, now: .zero)
        // The harness already typed it; a fresh pairing where the user cancels instead:
        var fresh = SMPPairingHarness(initiator: keyboard, responder: display)
        fresh.initiatorUser.silent = true
        fresh.run()
        XCTAssertTrue(fresh.initiator.isPairing)
        let actions = fresh.initiator.passkeyEntered(nil, now: .seconds(1))
        XCTAssertEqual(actions.first, .send([0x05, 0x01]))
        XCTAssertEqual(actions.last, .failed(.local(.passkeyEntryFailed, detail: "the user did not enter a passkey")))
        XCTAssertEqual(fresh.initiator.passkeyEntered(1_000_000, now: .seconds(2)), [], "nothing after the pairing ended")
    }

    func testAPeerThatStopsMidPairingTimesOutAfter30SecondsAndSMPCloses() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.muteAfter = (.responder, 1)  // the Pairing Response goes out, then silence
        h.run()
        XCTAssertNil(h.initiatorOutcome)
        h.advance(by: .seconds(29))
        XCTAssertNil(h.initiatorOutcome, "not before 30 s")
        h.advance(by: .seconds(1))
        XCTAssertEqual(h.initiatorOutcome.flatMap { if case .failure(.timeout) = $0 { true } else { nil } }, true)
        XCTAssertTrue(h.initiator.isClosed)
        // No further SMP traffic on this link (§3.4), in either direction.
        XCTAssertEqual(h.initiator.receive(SMPPDU.pairingFailed(.unspecifiedReason).encode(), now: .seconds(31)), [])
        guard case .failed(.unavailable) = h.initiator.start(now: .seconds(31)).first else { return XCTFail("start after timeout") }
    }

    func testAForgedPublicKeyOffTheCurveFailsBeforeAnyDHKeyIsComputed() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.tamper = { from, pdu in
            // The invalid-curve attack: a point with a valid x and a y that is not on P-256.
            guard from == .initiator, pdu.first == SMPCode.pairingPublicKey.rawValue else { return pdu }
            var forged = pdu
            forged[33] ^= 0x01
            return forged
        }
        h.run()
        XCTAssertEqual(failureReason(h.responderOutcome), .dhKeyCheckFailed)
        XCTAssertEqual(peerReason(h.initiatorOutcome), .dhKeyCheckFailed)
        XCTAssertFalse(h.transcript.contains { $0.from == .responder && $0.pdu.first == SMPCode.pairingPublicKey.rawValue },
                       "the responder never answers with its own key")
    }

    func testAReflectedPublicKeyIsRefused() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        var initiatorKey: [UInt8]?
        nonisolated(unsafe) var captured: [UInt8]?
        h.tamper = { from, pdu in
            guard pdu.first == SMPCode.pairingPublicKey.rawValue else { return pdu }
            if from == .initiator { captured = pdu; return pdu }
            return captured ?? pdu  // the responder "answers" with the initiator's own key
        }
        h.run()
        initiatorKey = captured
        XCTAssertNotNil(initiatorKey)
        XCTAssertEqual(failureReason(h.initiatorOutcome), .authenticationRequirements)
    }

    func testATamperedConfirmValueFailsWithConfirmValueFailed() {
        for sc in [false, true] {
            var settings = SMPPairingSettings()
            settings.secureConnections = sc
            var h = SMPPairingHarness(initiator: settings, responder: settings)
            h.tamper = { from, pdu in
                guard from == .responder, pdu.first == SMPCode.pairingConfirm.rawValue else { return pdu }
                var t = pdu
                t[1] ^= 0xFF
                return t
            }
            h.run()
            XCTAssertEqual(failureReason(h.initiatorOutcome), .confirmValueFailed, "sc=\(sc)")
        }
    }

    func testATamperedDHKeyCheckFailsWithDHKeyCheckFailed() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.tamper = { from, pdu in
            guard from == .initiator, pdu.first == SMPCode.pairingDHKeyCheck.rawValue else { return pdu }
            var t = pdu
            t[16] ^= 0x01
            return t
        }
        h.run()
        XCTAssertEqual(failureReason(h.responderOutcome), .dhKeyCheckFailed)
        XCTAssertNil(h.controllerKeys[.initiator])
    }

    func testKeySizeIsTheSmallerOfTheTwoAndTheKeyIsMasked() {
        var small = SMPPairingSettings(secureConnections: false, minimumKeySize: 7)
        small.maximumKeySize = 7
        var h = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: false, minimumKeySize: 7), responder: small)
        h.run()
        guard case let .success(i) = h.initiatorOutcome else { return XCTFail("\(String(describing: h.initiatorOutcome))") }
        XCTAssertEqual(i.keySize, 7)
        XCTAssertEqual(Array(i.linkKey[7...]), [UInt8](repeating: 0, count: 9), "the most significant octets are zero")
        XCTAssertEqual(i.received.longTermKey.map { Array($0[7...]) }, [UInt8](repeating: 0, count: 9))
    }

    func testAKeyBelowTheMinimumFailsWithEncryptionKeySize() {
        var small = SMPPairingSettings(minimumKeySize: 7)
        small.maximumKeySize = 7
        var strict = SMPPairingSettings()
        strict.minimumKeySize = 16
        var h = SMPPairingHarness(initiator: strict, responder: small)
        h.run()
        XCTAssertEqual(failureReason(h.initiatorOutcome), .encryptionKeySize)
        XCTAssertEqual(peerReason(h.responderOutcome), .encryptionKeySize)
    }

    func testSecureConnectionsOnlyRefusesLegacyPeers() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: false),
                                  responder: SMPPairingSettings(secureConnectionsOnly: true))
        h.run()
        XCTAssertEqual(failureReason(h.responderOutcome), .authenticationRequirements)
        XCTAssertEqual(peerReason(h.initiatorOutcome), .authenticationRequirements)
    }

    func testReservedValuesInAPairingRequestGetInvalidParameters() {
        var responder = SMPPairing(role: .responder, settings: SMPPairingSettings(),
                                   identity: SMPPairingHarness.identity(1, address: SMPPairingHarness.peripheralAddress),
                                   initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        for bad in ["01 05 00 01 10 07 07", "01 03 02 01 10 07 07", "01 03 00 01 06 07 07", "01 03 00 01 11 07 07", "01 03 00"] {
            let actions = responder.receive(hexBytes(bad), now: .zero)
            XCTAssertEqual(actions.first, .send([0x05, 0x0A]), bad)
            XCTAssertFalse(responder.isPairing, bad)
        }
    }

    func testUnexpectedCommandsEndThePairingAndReservedCodesAreIgnored() {
        var responder = SMPPairing(role: .responder, settings: SMPPairingSettings(),
                                   identity: SMPPairingHarness.identity(1, address: SMPPairingHarness.peripheralAddress),
                                   initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        // A confirm value out of nowhere.
        XCTAssertEqual(responder.receive(SMPPDU.pairingConfirm(Array(repeating: 1, count: 16)).encode(), now: .zero).first, .send([0x05, 0x08]))
        // A reserved code is ignored (Core 5.2+ Vol 3 Part H §3.3): no answer, nothing ends.
        XCTAssertEqual(responder.receive([0x3F, 1, 2], now: .zero), [])
        // Keys before encryption.
        XCTAssertEqual(responder.receive(SMPPDU.signingInformation(signatureKey: Array(repeating: 1, count: 16)).encode(), now: .zero).first,
                       .send([0x05, 0x08]))
        // A Pairing Failed while idle is not answered (two stacks must not reply to each other forever).
        XCTAssertEqual(responder.receive([0x05, 0x08], now: .zero), [])
        XCTAssertEqual(responder.receive([0x05], now: .zero), [])
    }

    func testAMICFailureEndsThePairingWithATypedError() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.run()
        XCTAssertNotNil(h.initiatorOutcome)
        // A pairing whose encryption the controller refuses:
        var i = SMPPairing(role: .initiator, settings: SMPPairingSettings(secureConnections: false),
                           identity: SMPPairingHarness.identity(1, address: SMPPairingHarness.centralAddress),
                           initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        var r = SMPPairing(role: .responder, settings: SMPPairingSettings(secureConnections: false),
                           identity: SMPPairingHarness.identity(2, address: SMPPairingHarness.peripheralAddress),
                           initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        var toResponder = i.start(now: .zero)
        var started = false
        for _ in 0..<20 {
            var toInitiator: [SMPAction] = []
            for case let .send(pdu) in toResponder { toInitiator += r.receive(pdu, now: .zero) }
            toResponder = []
            for action in toInitiator {
                if case let .send(pdu) = action { toResponder += i.receive(pdu, now: .zero) }
            }
            if toResponder.contains(where: { if case .startEncryption = $0 { true } else { false } }) { started = true; break }
        }
        XCTAssertTrue(started)
        XCTAssertEqual(i.encryptionChanged(status: 0x3D, enabled: false, now: .zero), [.failed(.encryptionFailed(status: 0x3D))])
        XCTAssertFalse(i.isPairing)
        // The link can pair again.
        XCTAssertEqual(i.start(now: .zero).count, 1)
    }

    func testADeclinedApprovalFailsWithPairingNotSupported() {
        var responder = SMPPairingSettings()
        responder.asksApproval = true
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: responder)
        h.responderUser.approves = false
        h.run()
        XCTAssertEqual(peerReason(h.initiatorOutcome), .pairingNotSupported)
        var approving = SMPPairingHarness(initiator: SMPPairingSettings(), responder: responder)
        approving.run()
        guard case .success = approving.responderOutcome else { return XCTFail("approved pairing") }
    }

    func testAPeripheralsSecurityRequestReachesTheCentralsOwner() {
        let r = SMPPairing(role: .responder, settings: SMPPairingSettings(mitm: true),
                           identity: SMPPairingHarness.identity(2, address: SMPPairingHarness.peripheralAddress),
                           initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        var i = SMPPairing(role: .initiator, settings: SMPPairingSettings(),
                           identity: SMPPairingHarness.identity(1, address: SMPPairingHarness.centralAddress),
                           initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        guard case let .send(request)? = r.securityRequest().first else { return XCTFail("no Security Request") }
        XCTAssertEqual(request, [0x0B, 0x0D])
        XCTAssertEqual(i.receive(request, now: .zero), [.securityRequested([.bonding, .mitm, .secureConnections])])
    }

    func testOutOfBandPairingInBothKinds() throws {
        // Legacy: both sides hold the same TK.
        let tk = Array(UInt8(1)...16)
        var legacy = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: false), responder: SMPPairingSettings(secureConnections: false),
                                       initiatorOOB: SMPOutOfBandData(legacyTemporaryKey: tk), responderOOB: SMPOutOfBandData(legacyTemporaryKey: tk))
        legacy.run()
        guard case let .success(l) = legacy.initiatorOutcome else { return XCTFail("\(String(describing: legacy.initiatorOutcome))") }
        XCTAssertEqual(l.model, .outOfBand)
        XCTAssertTrue(l.authenticated)
        // Different TKs: Confirm Value Failed.
        var wrong = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: false), responder: SMPPairingSettings(secureConnections: false),
                                      initiatorOOB: SMPOutOfBandData(legacyTemporaryKey: tk), responderOOB: SMPOutOfBandData(legacyTemporaryKey: tk.reversed()))
        wrong.run()
        XCTAssertEqual(failureReason(wrong.initiatorOutcome) ?? failureReason(wrong.responderOutcome), .confirmValueFailed)

        // Secure Connections: the responder's OOB data reached the initiator only.
        let responderData = try SMPLocalOOB.generate()
        var sc = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings(),
                                   initiatorOOB: SMPOutOfBandData(peerRandom: responderData.random, peerConfirm: responderData.confirm),
                                   responderOOB: SMPOutOfBandData(local: responderData))
        sc.run()
        guard case let .success(s) = sc.initiatorOutcome, case .success = sc.responderOutcome else {
            return XCTFail("\(String(describing: sc.initiatorOutcome)) / \(String(describing: sc.responderOutcome))")
        }
        XCTAssertEqual(s.model, .outOfBand)
        XCTAssertTrue(s.secureConnections)
        // A confirm value that does not commit to the responder's key: Confirm Value Failed.
        let other = try SMPLocalOOB.generate()
        var forged = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings(),
                                       initiatorOOB: SMPOutOfBandData(peerRandom: responderData.random, peerConfirm: other.confirm),
                                       responderOOB: SMPOutOfBandData(local: responderData))
        forged.run()
        XCTAssertEqual(failureReason(forged.initiatorOutcome), .confirmValueFailed)
    }

    /// Review finding: a peer's OOB flag alone must not make an authenticated key. A responder
    /// that gave out no OOB data refuses a pairing whose initiator claims to hold it.
    func testAnOOBFlagWithoutOurOOBDataIsRefused() {
        var responder = SMPPairing(role: .responder, settings: SMPPairingSettings(),
                                   identity: SMPPairingHarness.identity(2, address: SMPPairingHarness.peripheralAddress),
                                   initiatorAddress: SMPPairingHarness.centralAddress, responderAddress: SMPPairingHarness.peripheralAddress)
        // Pairing Request: NoInputNoOutput, OOB data flag 1, bonding + MITM + SC.
        let actions = responder.receive(hexBytes("01 03 01 0D 10 00 00"), now: .zero)
        XCTAssertEqual(actions.first, .send([0x05, 0x02]), "Pairing Failed: OOB Not Available")
        XCTAssertFalse(responder.isPairing)
        // And through the harness: the initiator sets the flag with peer data that was never ours.
        let stranger = try? SMPLocalOOB.generate()
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings(),
                                  initiatorOOB: SMPOutOfBandData(peerRandom: stranger?.random, peerConfirm: stranger?.confirm))
        h.run()
        XCTAssertEqual(failureReason(h.responderOutcome), .oobNotAvailable)
        XCTAssertNil(h.controllerKeys[.responder])
    }

    /// Review finding: Secure Connections Only is level 4, so Just Works is refused too.
    func testSecureConnectionsOnlyRefusesJustWorks() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings(secureConnectionsOnly: true))
        h.run()
        XCTAssertEqual(failureReason(h.responderOutcome), .authenticationRequirements)
        var passkey = SMPPairingHarness(initiator: SMPPairingSettings(ioCapability: .keyboardOnly, mitm: true),
                                        responder: SMPPairingSettings(ioCapability: .displayOnly, secureConnectionsOnly: true))
        passkey.run()
        guard case let .success(r) = passkey.responderOutcome else { return XCTFail("\(String(describing: passkey.responderOutcome))") }
        XCTAssertEqual(r.securityLevel, .secureConnections)
    }

    func testEachPairingHasItsOwnGeneration() {
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.run()
        XCTAssertEqual(h.initiator.generation, 1)
        XCTAssertEqual(h.responder.generation, 1)
        _ = h.initiator.start(now: .zero)
        XCTAssertEqual(h.initiator.generation, 2)
    }
}
