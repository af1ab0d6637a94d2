@testable import CoreBluetooth
import XCTest

/// The registry that shares one host per controller among the managers.
final class HostRegistryTests: XCTestCase {
    /// A host whose controller is gone is not handed out, even before its monitor has noticed
    /// (a manager reopening after the loss got the dead host back and reported `.poweredOn` on
    /// it); and the old host's later `forget` leaves the new one open. A registry of its own,
    /// so no monitor (they use the shared one) can forget the dead host first.
    func testAHostWhoseControllerIsGoneIsReplacedAndItsForgetLeavesTheNewOne() async throws {
        let rig = try TCPControllerRig(baseAddress: 0xC0_DE_00_00_00_00)
        addTeardownBlock { await rig.close() }
        let registry = CBHostRegistry()
        let spec = rig.spec

        let first = try await registry.host(spec: spec)
        let again = try await registry.host(spec: spec)
        XCTAssertTrue(again === first, "one host per controller")
        // The host's own monitor says when it has seen the loss (it forgets the host in the
        // shared registry, not in this one).
        let gone = expectation(description: "the first host reports its controller gone")
        gone.assertForOverFulfill = false
        _ = first.observe { _ in gone.fulfill() }
        let connection = try XCTUnwrap(rig.accepted.first)
        await connection.close()
        await fulfillment(of: [gone], timeout: 20)
        let firstState = await first.central.state
        XCTAssertNotEqual(firstState, .poweredOn, "the host saw its controller go")

        // Two managers reopening at once share the one new host.
        async let one = registry.host(spec: spec)
        async let other = registry.host(spec: spec)
        let (second, also) = try await (one, other)
        XCTAssertTrue(also === second, "one new host for both")
        XCTAssertFalse(second === first, "the dead host is not handed out")
        let secondState = await second.central.state
        XCTAssertEqual(secondState, .poweredOn)
        XCTAssertEqual(rig.accepted.count, 2, "a new connection to the controller")

        await registry.forget(first) // what the old host's monitor does once it notices
        let third = try await registry.host(spec: spec)
        XCTAssertTrue(third === second, "the new host stays open")
        XCTAssertEqual(rig.accepted.count, 2)

        await second.central.close()
    }
}
