import XCTest
import BLEWire
@testable import BLEHost

/// The whole pairing matrix (Core spec Vol 3 Part H §2.3.5.1, Table 2.8) through two Security
/// Managers back to back: every IO capability pair × legacy and Secure Connections × bonding
/// on and off × MITM asked for or not. Each cell must reach the association model and security
/// level the table gives, with both ends holding the same key, or fail as the table says.
final class SMPPairingMatrixTests: XCTestCase {
    static let capabilities: [SMPIOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]

    /// Table 2.8 written out independently of the code: rows are the responder's capability,
    /// columns the initiator's, in the order of `capabilities`. J Just Works, N Numeric
    /// Comparison, Pi initiator displays, Pr responder displays, Pb both type.
    static let legacyTable = [
        ["J", "J", "Pr", "J", "Pr"],
        ["J", "J", "Pr", "J", "Pr"],
        ["Pi", "Pi", "Pb", "J", "Pi"],
        ["J", "J", "J", "J", "J"],
        ["Pi", "Pi", "Pr", "J", "Pi"],
    ]
    static let secureConnectionsTable = [
        ["J", "J", "Pr", "J", "Pr"],
        ["J", "N", "Pr", "J", "N"],
        ["Pi", "Pi", "Pb", "J", "Pi"],
        ["J", "J", "J", "J", "J"],
        ["Pi", "N", "Pr", "J", "N"],
    ]

    func testEveryIOCapabilityPairBothPairingKindsBondingAndMITM() {
        var cells = 0
        for sc in [false, true] {
            for bonding in [false, true] {
                for mitm in [false, true] {
                    for (ri, responderIO) in Self.capabilities.enumerated() {
                        for (ii, initiatorIO) in Self.capabilities.enumerated() {
                            let expected = mitm ? (sc ? Self.secureConnectionsTable : Self.legacyTable)[ri][ii] : "J"
                            check(initiatorIO: initiatorIO, responderIO: responderIO, sc: sc, bonding: bonding, mitm: mitm, expected: expected)
                            cells += 1
                        }
                    }
                }
            }
        }
        XCTAssertEqual(cells, 200)
    }

    private func check(initiatorIO: SMPIOCapability, responderIO: SMPIOCapability, sc: Bool, bonding: Bool, mitm: Bool, expected: String) {
        let label = "initiator \(initiatorIO.rawValue) responder \(responderIO.rawValue) sc=\(sc) bonding=\(bonding) mitm=\(mitm)"
        var h = SMPPairingHarness(
            initiator: SMPPairingSettings(ioCapability: initiatorIO, bonding: bonding, mitm: mitm, secureConnections: sc),
            responder: SMPPairingSettings(ioCapability: responderIO, bonding: bonding, mitm: false, secureConnections: true))
        h.run()
        if mitm && expected == "J" {
            // The initiator demanded MITM protection that these capabilities cannot give.
            XCTAssertEqual(failureReason(h.initiatorOutcome), .authenticationRequirements, label)
            XCTAssertEqual(peerReason(h.responderOutcome), .authenticationRequirements, label)
            return
        }
        guard case let .success(i) = h.initiatorOutcome, case let .success(r) = h.responderOutcome else {
            return XCTFail("\(label): \(String(describing: h.initiatorOutcome)) / \(String(describing: h.responderOutcome))")
        }
        let model: SMPAssociationModel = switch expected {
        case "J": .justWorks
        case "N": .numericComparison
        default: .passkeyEntry
        }
        XCTAssertEqual(i.model, model, label)
        XCTAssertEqual(r.model, model, label)
        XCTAssertEqual(i.secureConnections, sc, label)
        XCTAssertEqual(r.secureConnections, sc, label)
        XCTAssertEqual(i.bonded, bonding, label)
        XCTAssertEqual(i.keySize, 16, label)
        XCTAssertEqual(i.securityLevel, model == .justWorks ? .encrypted : (sc ? .secureConnections : .authenticated), label)
        XCTAssertEqual(r.securityLevel, i.securityLevel, label)
        // Key agreement is checked, not assumed: both controllers got the same key.
        XCTAssertEqual(h.controllerKeys[.initiator], h.controllerKeys[.responder], label)
        XCTAssertEqual(i.linkKey, r.linkKey, label)
        XCTAssertEqual(i.linkKey.count, 16, label)
        // What one side sent is what the other received.
        XCTAssertEqual(i.sent, r.received, label)
        XCTAssertEqual(r.sent, i.received, label)
        XCTAssertEqual(i.received.identityAddress, SMPPairingHarness.peripheralAddress, label)
        XCTAssertEqual(i.received.longTermKey != nil, !sc, label + " (legacy distributes an LTK, Secure Connections derives it)")
        XCTAssertNotNil(r.received.signatureKey, label)
        switch expected {
        case "Pi": XCTAssertNotNil(h.displayed[.initiator], label); XCTAssertNil(h.displayed[.responder], label)
        case "Pr": XCTAssertNotNil(h.displayed[.responder], label); XCTAssertNil(h.displayed[.initiator], label)
        case "Pb": XCTAssertTrue(h.displayed.isEmpty, label)
        case "N":
            XCTAssertEqual(h.compared[.initiator], h.compared[.responder], label)
            XCTAssertNotNil(h.compared[.initiator], label)
        default: XCTAssertTrue(h.displayed.isEmpty && h.compared.isEmpty, label)
        }
    }
}

func failureReason(_ r: Result<SMPPairingOutcome, SMPPairingError>?) -> SMPPairingFailedReason? {
    if case let .failure(.local(reason, _)) = r { return reason }
    return nil
}

func peerReason(_ r: Result<SMPPairingOutcome, SMPPairingError>?) -> SMPPairingFailedReason? {
    if case let .failure(.peer(reason)) = r { return reason }
    return nil
}
