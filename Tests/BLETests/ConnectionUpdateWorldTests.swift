import BLE
import BLEHCI
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// `PeripheralManager.requestConnectionParameters` between two of our hosts on the virtual radio,
/// in virtual time: the peripheral's LE Connection Update (Core spec Vol 4 Part E §7.8.18) runs
/// the Connection Parameters Request procedure (Vol 6 Part B §5.1.7), and the caller learns how
/// it ended from LE Connection Update Complete (§7.7.65.3): the new parameters, or the status of
/// a refusal with the link's parameters left as they were.
final class ConnectionUpdateWorldTests: XCTestCase {
    /// A central whose Link Layer lacks the Connection Parameters Request procedure answers
    /// Unsupported Remote Feature (0x1A): the peripheral's host asks again over L2CAP (Vol 3
    /// Part A §4.20), the central's host applies the parameters, and the call returns them.
    func testUnsupportedRemoteFeatureFallsBackToTheL2CAPRequest() async throws {
        try await VirtualWorld.run(limit: .seconds(120)) { world in
            var lacking = VirtualControllerConfiguration()
            lacking.refusesConnectionParameterRequests = .unsupportedRemoteFeature
            let (manager, c, p, central) = try await Self.connected(world, central: lacking)
            let applied = try await manager.requestConnectionParameters(intervalMin: 30, intervalMax: 40, latency: 0, supervisionTimeout: 400, for: c)
            XCTAssertEqual(applied.interval, 30, "the central applied the minimum asked over L2CAP")
            XCTAssertEqual(applied.supervisionTimeout, 400)
            for _ in 0..<100 where p.connectionParameters.interval != 30 { try await world.clock.sleep(for: .milliseconds(10)) }
            XCTAssertEqual(p.connectionParameters.interval, 30, "the central's link has them too")
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }

    /// Found by review: one request at a time per link. Two at once: one gets its parameters,
    /// the other `.busy` (which one depends on scheduling, so only the count is checked).
    func testASecondRequestWhileOneIsUnderWayIsBusy() async throws {
        let outcomes = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let (manager, c, p, central) = try await Self.connected(world, central: VirtualControllerConfiguration())
            async let first: String = Self.outcome { try await manager.requestConnectionParameters(intervalMin: 30, intervalMax: 30, latency: 0, supervisionTimeout: 400, for: c) }
            async let second: String = Self.outcome { try await manager.requestConnectionParameters(intervalMin: 36, intervalMax: 36, latency: 0, supervisionTimeout: 400, for: c) }
            let both = await [first, second]
            try await p.disconnect()
            await central.close()
            await manager.close()
            return both
        }
        XCTAssertEqual(outcomes.filter { $0 == "busy" }.count, 1, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0.hasPrefix("interval") }.count, 1, "\(outcomes)")
    }

    /// Parameters the link already has need no request: the call returns them at once, with
    /// no L2CAP request or LE Connection Update (a peripheral's controller reports no update
    /// that changes nothing, Vol 4 Part E §7.7.65.3, so waiting for one could only time out).
    func testAskingForTheCurrentParametersReturnsThemAtOnce() async throws {
        try await VirtualWorld.run(limit: .seconds(120)) { world in
            let (manager, c, p, central) = try await Self.connected(world, central: VirtualControllerConfiguration())
            let now = p.connectionParameters
            let started = world.clock.now()
            let applied = try await manager.requestConnectionParameters(intervalMin: now.interval, intervalMax: now.interval + 8, latency: now.latency,
                                                                        supervisionTimeout: now.supervisionTimeout, for: c)
            XCTAssertEqual(applied, now)
            XCTAssertEqual(world.clock.now(), started, "answered without a round trip")
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }

    static func outcome(_ body: () async throws -> LinkParameters) async -> String {
        do { return "interval \(try await body().interval)" } catch BLEError.busy { return "busy" } catch { return "\(error)" }
    }

    /// A peripheral manager and a central (on a controller configured by `central`) connected to it.
    static func connected(_ world: VirtualWorld, central controller: VirtualControllerConfiguration)
        async throws -> (PeripheralManager, ConnectedCentral, Peripheral, Central) {
        let (manager, _) = try await world.addPeripheralManager(name: "Timing")
        let events = await manager.events
        try await manager.startAdvertising(AdvertisingData())
        let own = await manager.address
        let address = try XCTUnwrap(own)
        let device = await world.radio.addDevice(configuration: controller)
        let central = try await Central.open(transport: device.transport, clock: world.clock)
        let peripheral = try await central.connect(address)
        var connected: ConnectedCentral?
        for await e in events { if case let .connected(c) = e { connected = c; break } }
        return (manager, try XCTUnwrap(connected), peripheral, central)
    }

    func testAGrantedRequestReturnsTheNewParameters() async throws {
        try await VirtualWorld.run { world in
            let (manager, c, p, central) = try await Self.connected(world, central: VirtualControllerConfiguration())
            let applied = try await manager.requestConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400, for: c)
            XCTAssertEqual(applied.interval, 24, "the central picks the minimum")
            XCTAssertEqual(applied.supervisionTimeout, 400)
            // The central's host learns it from its own controller's event: a few virtual ms.
            for _ in 0..<100 where p.connectionParameters.interval != 24 { try await world.clock.sleep(for: .milliseconds(10)) }
            let seen = p.connectionParameters
            XCTAssertEqual(seen.interval, 24, "the central's link has them too")
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }

    /// A central whose Link Layer refuses the parameters: the caller gets the HCI status of LE
    /// Connection Update Complete, and the link keeps its parameters.
    func testARefusedRequestThrowsTheStatusAndKeepsTheParameters() async throws {
        try await VirtualWorld.run { world in
            var refusing = VirtualControllerConfiguration()
            refusing.refusesConnectionParameterRequests = .unacceptableConnectionParameters
            let (manager, c, p, central) = try await Self.connected(world, central: refusing)
            let before = p.connectionParameters
            do {
                try await manager.requestConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400, for: c)
                XCTFail("a refused request must throw")
            } catch BLEError.hci(.commandFailed(opcode: .leConnectionUpdate, status: let status)) {
                XCTAssertEqual(status, .unacceptableConnectionParameters)
            }
            try await world.clock.sleep(for: .seconds(1))
            let after = p.connectionParameters
            XCTAssertEqual(after, before, "the link keeps its parameters")
            // The link still serves: a request that is granted afterwards would change them, but
            // this central refuses all, so a second one fails the same way.
            do {
                try await manager.requestConnectionParameters(intervalMin: 12, intervalMax: 12, latency: 0, supervisionTimeout: 200, for: c)
                XCTFail("refused again")
            } catch BLEError.hci(.commandFailed(opcode: .leConnectionUpdate, status: .unacceptableConnectionParameters)) {}
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }
}
