import BLECrypto
import BLEWire
@testable import BLEHost
import XCTest

/// Attacks on the sans-IO SMP machine, driven by hand as a malicious peer:
/// each must fail before the peer learns anything.
final class SMPMaliciousPeerTests: XCTestCase {
    static let central = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    static let peripheral = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_02), type: .public)
    static let identity = SMPLocalIdentity(identityResolvingKey: Array(repeating: 0x11, count: 16),
                                           identityAddress: central, signatureKey: Array(repeating: 0x12, count: 16))
    /// P-256 field prime p, MSB first.
    static let p: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]

    /// p - y, MSB first.
    static func negate(_ y: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(p[i]) - Int(y[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            out[i] = UInt8(d)
        }
        return out
    }

    static func sent(_ actions: [SMPAction]) -> [[UInt8]] {
        actions.compactMap { if case let .send(b) = $0 { return b } else { return nil } }
    }

    /// CVE-2020-26558 with the mirrored point (X, p − Y): a check of X and Y together lets it
    /// through, and the attacker completes all 20 passkey rounds by reflecting Cai/Nai and reads
    /// every passkey bit. Refused on the X coordinate alone, as Zephyr and BlueZ do.
    func testPasskeyEntryWithOurXCoordinateAndNegatedYIsRefused() throws {
        var settings = SMPPairingSettings(ioCapability: .displayOnly, mitm: true)
        settings.displayedPasskey = nil
        var m = SMPPairing(role: .initiator, settings: settings, identity: Self.identity,
                           initiatorAddress: Self.central, responderAddress: Self.peripheral)
        _ = m.start(now: .zero)
        let response = SMPPDU.pairingResponse(SMPPairingFeatures(
            ioCapability: .keyboardOnly, authRequirements: [.bonding, .mitm, .secureConnections],
            initiatorKeyDistribution: [], responderKeyDistribution: [])).encode()
        let a1 = m.receive(response, now: .zero)
        var shown: UInt32?
        for a in a1 { if case let .displayPasskey(v) = a { shown = v } }
        let pk = try XCTUnwrap(Self.sent(a1).first { $0.first == SMPCode.pairingPublicKey.rawValue })
        let x = Array(pk[1...32]), yMSB = Array(pk[33...64].reversed())
        let mirrored = [SMPCode.pairingPublicKey.rawValue] + x + Array(Self.negate(yMSB).reversed())
        var out = m.receive(mirrored, now: .zero)
        // A fixed stack fails here.
        XCTAssertTrue(out.contains { if case .failed = $0 { return true } else { return false } },
                      "a public key with our own X coordinate must end the pairing")
        // Otherwise: reflect every commitment and nonce, learning one bit per round.
        let xMSB = Array(x.reversed())
        var learned: UInt32 = 0
        for round in 0..<20 {
            guard let ca = Self.sent(out).first(where: { $0.first == SMPCode.pairingConfirm.rawValue }) else { return }
            let na = Self.sent(m.receive(ca, now: .zero)).first { $0.first == SMPCode.pairingRandom.rawValue }
            guard let na else { return }
            let naMSB = Array(na[1...].reversed()), caMSB = Array(ca[1...].reversed())
            if try SMPCrypto.f4(u: xMSB, v: xMSB, x: naMSB, z: 0x81) == caMSB { learned |= 1 << UInt32(round) }
            out = m.receive(na, now: .zero)
        }
        XCTAssertNotEqual(learned, shown, "the reflecting peer read the whole passkey")
    }

    /// ES-24491 (Vol 3 Part H §2.3.5.5): an initiator that receives LP_CONFIRM_R equal to its
    /// own LP_CONFIRM_I fails with Confirm Value Failed, before it reveals Mrand (a reflected
    /// Mconfirm/Mrand would pass c1 and start encryption with an STK the peer never had to know).
    func testLegacyReflectedConfirmFailsWithConfirmValueFailed() throws {
        var settings = SMPPairingSettings()
        settings.secureConnections = false
        var m = SMPPairing(role: .initiator, settings: settings, identity: Self.identity,
                           initiatorAddress: Self.central, responderAddress: Self.peripheral)
        _ = m.start(now: .zero)
        let response = SMPPDU.pairingResponse(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [.bonding],
            initiatorKeyDistribution: [], responderKeyDistribution: [])).encode()
        let mconfirm = try XCTUnwrap(Self.sent(m.receive(response, now: .zero)).first)
        XCTAssertEqual(mconfirm.first, SMPCode.pairingConfirm.rawValue)
        let last = m.receive(mconfirm, now: .zero)
        XCTAssertEqual(Self.sent(last).first, [SMPCode.pairingFailed.rawValue, 0x04], "Confirm Value Failed, got \(last)")
        XCTAssertFalse(last.contains { if case .startEncryption = $0 { return true } else { return false } })
    }
}

/// What the SMP machine accepts from a peer, and when: keys, the debug key, legacy key sizes.
final class SMPKeyAcceptanceTests: XCTestCase {
    func testKeysThatArriveBeforeTheCentralsEncryptionChangeAreHeldNotRefused() {
        for sc in [false, true] {
            var h = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: sc), responder: SMPPairingSettings(secureConnections: sc))
            h.keysBeforeCentralEncryptionChange = true
            h.run()
            guard case let .success(i)? = h.initiatorOutcome, case let .success(r)? = h.responderOutcome else {
                return XCTFail("sc \(sc): \(String(describing: h.initiatorOutcome)) / \(String(describing: h.responderOutcome))")
            }
            XCTAssertEqual(i.received.identityResolvingKey, r.sent.identityResolvingKey, "sc \(sc)")
            XCTAssertEqual(r.received.identityResolvingKey, i.sent.identityResolvingKey, "sc \(sc)")
        }
    }

    func testAPeerUsingTheDebugKeyIsRefusedUnlessAllowed() {
        let debugKey = SMPPDU.pairingPublicKey(x: Array(P256.debugPublicKeyX.reversed()), y: Array(P256.debugPublicKeyY.reversed())).encode()
        var h = SMPPairingHarness(initiator: SMPPairingSettings(), responder: SMPPairingSettings())
        h.tamper = { role, pdu in role == .responder && pdu.first == SMPCode.pairingPublicKey.rawValue ? debugKey : pdu }
        h.run()
        guard case let .failure(.local(reason, _))? = h.initiatorOutcome else { return XCTFail("\(String(describing: h.initiatorOutcome))") }
        XCTAssertEqual(reason, .authenticationRequirements)

        var allowed = SMPPairingSettings()
        allowed.acceptsDebugKeys = true
        var m = SMPPairing(role: .initiator, settings: allowed, identity: SMPMaliciousPeerTests.identity,
                           initiatorAddress: SMPMaliciousPeerTests.central, responderAddress: SMPMaliciousPeerTests.peripheral)
        _ = m.start(now: .zero)
        _ = m.receive(SMPPDU.pairingResponse(SMPPairingFeatures(ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
                                                                initiatorKeyDistribution: [], responderKeyDistribution: [])).encode(), now: .zero)
        XCTAssertFalse(m.receive(debugKey, now: .zero).contains { if case .failed = $0 { return true } else { return false } })
    }

    func testALegacyLTKIsKeptOnlyToTheNegotiatedSize() {
        var small = SMPPairingSettings(secureConnections: false, minimumKeySize: 7)
        small.maximumKeySize = 10
        var h = SMPPairingHarness(initiator: SMPPairingSettings(secureConnections: false, minimumKeySize: 7), responder: small)
        h.run()
        guard case let .success(i)? = h.initiatorOutcome else { return XCTFail("\(String(describing: h.initiatorOutcome))") }
        XCTAssertEqual(i.keySize, 10)
        XCTAssertEqual(i.received.longTermKey.map { Array($0[10...]) }, [UInt8](repeating: 0, count: 6))
    }
}
