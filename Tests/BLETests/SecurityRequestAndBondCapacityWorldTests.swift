import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// A peripheral's Security Request that meets a silent or slow central, and a full bond store
/// that makes room for a stronger bond: two whole hosts on the virtual radio in virtual time.
final class SecurityRequestAndBondCapacityWorldTests: XCTestCase {
    /// A central that ignores a Security Request must not leave `requestSecurity` waiting for
    /// ever: it fails with the SMP timeout after 30 seconds.
    func testRequestSecurityFromACentralThatNeverAnswersTimesOut() async throws {
        try await VirtualWorld.run { world in
            var quiet = HostConfiguration()
            quiet.security.answersSecurityRequests = false
            let (manager, device) = try await world.addPeripheralManager(name: "Lock")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build())
            let events = await manager.events
            let (central, _) = try await world.addCentral(configuration: quiet)
            _ = try await central.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            var connected: ConnectedCentral?
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            let who = try XCTUnwrap(connected)
            let started = world.clock.now()
            do {
                try await manager.requestSecurity(from: who)
                XCTFail("no answer, yet secured")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error, .timeout)
            }
            let waited = world.clock.now() - started
            XCTAssertGreaterThanOrEqual(waited, .seconds(30))
            XCTAssertLessThan(waited, .seconds(31))
            await central.close()
            await manager.close()
        }
    }
}

extension SecurityRequestAndBondCapacityWorldTests {
    /// Just Works bonds (anyone in range can make them) must not fill the store for good: when
    /// it is full, an authenticated pairing takes the place of an unauthenticated bond.
    func testAFullBondStoreMakesRoomForAnAuthenticatedBond() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let store = InMemoryBondStore()
            var peripheral = PairingWorldTests.security(io: .displayOnly, agent: BoardAgent(board: board), store: store)
            peripheral.security.maximumBonds = 2
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build())
            let address = DeviceAddress(device.address, type: .public)
            // Two Just Works bonds fill it; a third is not stored.
            for _ in 0..<3 {
                let (c, _) = try await world.addCentral(configuration: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
                let p = try await c.connect(address, timeout: .seconds(5))
                _ = try await p.pair()
                await c.close()
                try await world.clock.sleep(for: .seconds(1))
            }
            XCTAssertEqual(try store.bonds().count, 2)
            // A passkey pairing (authenticated) still gets in, in place of a Just Works bond.
            let (c, _) = try await world.addCentral(configuration: PairingWorldTests.security(io: .keyboardOnly, agent: BoardAgent(board: board), store: InMemoryBondStore(), mitm: true))
            let p = try await c.connect(address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertEqual(result.securityLevel, .secureConnections)
            let bonds = try store.bonds()
            XCTAssertEqual(bonds.count, 2)
            XCTAssertEqual(bonds.filter(\.authenticated).count, 1)
            await c.close()
            await manager.close()
        }
    }
}

/// A user who takes `delay` (on the world's clock) to approve a pairing.
struct SlowApprover: PairingAgent {
    let clock: any BLEClock
    let delay: Duration
    func approvePairing(with peer: DeviceAddress, features: SMPPairingFeatures) async -> Bool {
        try? await clock.sleep(for: delay)
        return true
    }
}

extension SecurityRequestAndBondCapacityWorldTests {
    /// The Security Request's deadline must not fail `requestSecurity` while the
    /// pairing it led to is under way (a central that answers late, a user who takes a while).
    func testRequestSecurityWaitsForAPairingThatStartedBeforeItsDeadline() async throws {
        try await VirtualWorld.run { world in
            var peripheral = HostConfiguration()
            peripheral.security.pairing.asksApproval = true
            peripheral.security.agent = SlowApprover(clock: world.clock, delay: .seconds(15))
            var quiet = HostConfiguration()
            quiet.security.answersSecurityRequests = false
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build())
            let events = await manager.events
            let (central, _) = try await world.addCentral(configuration: quiet)
            let p = try await central.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            var connected: ConnectedCentral?
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            let who = try XCTUnwrap(connected)
            let request = Task(executorPreference: world.clock.taskExecutor) { try await manager.requestSecurity(from: who) }
            try await world.clock.sleep(for: .seconds(20))
            _ = try await p.pair()
            let level = try await request.value
            XCTAssertEqual(level, .encrypted, "the pairing that ended after the deadline secured the link")
            await central.close()
            await manager.close()
        }
    }
}
