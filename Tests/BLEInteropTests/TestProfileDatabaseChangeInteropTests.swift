import Foundation
import XCTest

/// `ble serve test` changing its database under a Bumble 0.0.236 client over rootcanal (Core
/// spec Vol 3 Part G §7.1): the client subscribes to Service Changed and writes `db-change` to
/// the write-only characteristic twice. Each write is answered, then indicated with the toggled
/// service's range; a discovery after the first finds the service there and every other
/// service where it was, one after the second finds it gone.
final class TestProfileDatabaseChangeInteropTests: XCTestCase {
    struct Listed: Equatable {
        let uuid: String
        let start: Int
        let end: Int
    }

    static func services(_ event: PeerEvent) -> [Listed] {
        guard case let .array(items)? = event["services"] else { return [] }
        return items.compactMap { item in
            guard case let .object(o) = item, let uuid = o["uuid"]?.stringValue, let start = o["start"]?.intValue,
                  let end = o["end"]?.intValue else { return nil }
            return Listed(uuid: uuid, start: start, end: end)
        }
    }

    func testABumbleClientIsToldOfEachChangeAndFindsTheServiceInTheIndicatedRange() throws {
        let env = try InteropEnvironment.current()
        let serve = try ServeProcess(profile: "test", environment: env)
        addTeardownBlock { serve.stop() }
        let client = try startPeer("service_changed_client.py",
                                   arguments: ["--target", serve.address.description, "--write", "8f3c0005-6c5a-4d2e-9b1f-2f0a1c3b4d5e", "--rounds", "2"],
                                   environment: env)
        let subscribed = try client.waitForEvent("subscribed", timeout: 60)
        let before = Self.services(subscribed)
        XCTAssertEqual(before.last, Listed(uuid: "8f3c0001-6c5a-4d2e-9b1f-2f0a1c3b4d5e", start: 0x000E, end: 0x0026), "\(subscribed)")
        let toggled = Listed(uuid: "8f3c000c-6c5a-4d2e-9b1f-2f0a1c3b4d5e", start: 0x0027, end: 0x0029)

        let added = try client.waitForEvent(matching: { $0.name == "service_changed" || $0.name == "no_service_changed" || $0.name == "error" }, timeout: 30)
        XCTAssertEqual([added.int("start"), added.int("end")], [0x0027, 0x0029], "\(added)")
        let withService = try client.waitForEvent("services", timeout: 20)
        XCTAssertEqual(Self.services(withService), before + [toggled])

        let removed = try client.waitForEvent(matching: { $0.name == "service_changed" || $0.name == "no_service_changed" || $0.name == "error" }, timeout: 30)
        XCTAssertEqual([removed.int("start"), removed.int("end")], [0x0027, 0x0029], "\(removed)")
        let without = try client.waitForEvent("services", timeout: 20)
        XCTAssertEqual(Self.services(without), before)
        try client.waitForEvent("done", timeout: 20)

        let first = try serve.waitFor("databaseChanged", timeout: 20)
        let second = try serve.waitFor("databaseChanged", timeout: 20)
        XCTAssertEqual([first["added"] as? Bool, second["added"] as? Bool], [true, false])
        XCTAssertEqual([first["trigger"] as? String, second["trigger"] as? String], ["write", "write"])
    }
}
