import BLE
import BLEHost
import BLEVirtual
import XCTest

/// The pairing matrix through whole hosts on the virtual radio, in virtual time: every IO
/// capability pair × legacy and Secure Connections × bonding on and off, the central asking for
/// MITM protection. Each cell reaches the level Table 2.8 (Core spec Vol 3 Part H §2.3.5.1)
/// gives, or fails with Authentication Requirements where only Just Works is possible. The radio
/// encrypts only when both controllers got the same key, and the two bond stores must agree.
final class PairingWorldMatrixTests: XCTestCase {
    static let capabilities: [SMPIOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]

    /// Whether the pair gets an authenticated model (Table 2.8; rows the responder, columns the initiator).
    static func authenticated(initiator: SMPIOCapability, responder: SMPIOCapability, sc: Bool) -> Bool {
        if initiator == .noInputNoOutput || responder == .noInputNoOutput { return false }
        let displayOnlyish: Set<SMPIOCapability> = [.displayOnly, .displayYesNo]
        if displayOnlyish.contains(initiator) && displayOnlyish.contains(responder) {
            return sc && initiator == .displayYesNo && responder == .displayYesNo
        }
        return true
    }

    func testEveryCellThroughTwoHosts() async throws {
        var cells = 0
        for sc in [false, true] {
            for bonding in [false, true] {
                for responderIO in Self.capabilities {
                    for initiatorIO in Self.capabilities {
                        try await cell(initiatorIO: initiatorIO, responderIO: responderIO, sc: sc, bonding: bonding)
                        cells += 1
                    }
                }
            }
        }
        XCTAssertEqual(cells, 100)
    }

    private func cell(initiatorIO: SMPIOCapability, responderIO: SMPIOCapability, sc: Bool, bonding: Bool) async throws {
        let label = "initiator \(initiatorIO.rawValue) responder \(responderIO.rawValue) sc=\(sc) bonding=\(bonding)"
        let expectAuthenticated = Self.authenticated(initiator: initiatorIO, responder: responderIO, sc: sc)
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            // KeyboardOnly on both sides: nobody displays, the two users agree on a number.
            if initiatorIO == .keyboardOnly && responderIO == .keyboardOnly { board.show(246_810) }
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            var central = PairingWorldTests.security(io: initiatorIO, agent: BoardAgent(board: board), store: centralStore, mitm: true)
            central.security.pairing.secureConnections = sc
            central.security.pairing.bonding = bonding
            var peripheral = PairingWorldTests.security(io: responderIO, agent: BoardAgent(board: board), store: peripheralStore)
            peripheral.security.pairing.bonding = bonding
            let rig = try await PairingWorldTests.rig(world, central: central, peripheral: peripheral)
            let events = await rig.manager.events
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            do {
                let result = try await p.pair()
                XCTAssertTrue(expectAuthenticated, "\(label): paired, but Table 2.8 allows only Just Works")
                XCTAssertEqual(result.secureConnections, sc, label)
                XCTAssertEqual(result.securityLevel, sc ? .secureConnections : .authenticated, label)
                XCTAssertEqual(result.bonded, bonding, label)
                for await e in events { if case .paired = e { break } }
                let value = try await PairingWorldTests.read(PairingWorldTests.authenticated, on: p)
                XCTAssertEqual(value, "authenticated", label)
                let c = try centralStore.bonds(), r = try peripheralStore.bonds()
                XCTAssertEqual(c.count, bonding ? 1 : 0, label)
                XCTAssertEqual(r.count, bonding ? 1 : 0, label)
                if bonding { XCTAssertEqual(c.first?.peerLongTermKey, r.first?.localLongTermKey, label) }
            } catch let BLEError.security(error) {
                XCTAssertFalse(expectAuthenticated, "\(label): \(error)")
                XCTAssertEqual(error.reason, .authenticationRequirements, label)
                let level = await p.securityLevel
                XCTAssertEqual(level, .none, label)
            }
            await rig.central.close()
            await rig.manager.close()
        }
    }
}
