import BLE
import BLEWire
import Foundation
import XCTest

/// What this stack does of Enhanced ATT (Core spec Vol 3 Part G §5.3, §7.4) against Bumble
/// 0.0.236, whose `eatt_enabled` device sets "EATT Supported" in its Server Supported Features
/// and serves ATT on enhanced credit-based channels of SPSM 0x0027: `ble gatt` says whether a
/// peer offers EATT, and our enhanced channels carry ATT bearers to Bumble's server, each
/// answering its own request; and Bumble's EATT client (`Client.connect_eatt`) against `ble serve
/// --eatt`, whose GATT server answers on each bearer and notifies on one.
/// (EATTClientInteropTests runs our GATT client on such bearers.)
final class EATTInteropTests: XCTestCase {
    static let characteristic = "7E1F00A1-8D0B-4C1E-9A00-5B1E00C0FFEE"

    func testBleGattSaysWhetherThePeerOffersEATT() throws {
        let env = try InteropEnvironment.current()
        let eatt = try startPeer("eatt_peer.py", environment: env)
        let offered = try BLETool.run(["gatt", "\(eatt.address)/random", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(offered.succeeded, "\(offered)")
        XCTAssertTrue(offered.stdout.contains("EATT: offered (Server Supported Features 0x01)"), offered.stdout)

        let plain = try startPeer("peripheral.py", environment: env)
        let without = try BLETool.run(["gatt", "\(plain.address)/random", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(without.succeeded, "\(without)")
        XCTAssertTrue(without.stdout.contains("EATT: not offered"), without.stdout)
    }

    /// A value readable only when encrypted makes `ble gatt` pair (security raised on demand),
    /// after which our client opens its Enhanced ATT bearers, and the EATT line counts them.
    func testBleGattCountsTheEnhancedBearersOnAnEncryptedLink() throws {
        let env = try InteropEnvironment.current()
        let eatt = try startPeer("eatt_peer.py", arguments: ["--secret"], environment: env)
        // Its own bond store: the run's shared one may hold another Bumble peer's bond.
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-eatt-bonds-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: bonds) }
        let run = try BLETool.run(["gatt", "\(eatt.address)/random", "--hci", env.rootcanal], environment: ["BLE_BONDS": bonds.path], timeout: 60)
        XCTAssertTrue(run.succeeded, "\(run)")
        XCTAssertTrue(run.stdout.contains("EATT: offered (Server Supported Features 0x01), 2 bearers open"), run.stdout)
    }

    /// Two enhanced channels on SPSM 0x0027 are two ATT bearers to Bumble's server: an
    /// ATT_READ_REQ on each, sent at once, is answered with ATT_READ_RSP on the same bearer
    /// (Vol 3 Part F §3.2.11: each bearer has its own request/response flow).
    func testTwoEnhancedChannelsAreTwoATTBearersToBumble() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("eatt_peer.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random")), timeout: .seconds(15))
        let db = try await p.discoverDatabase(readValues: true)
        XCTAssertEqual(db.offersEATT, true)
        let handle = try XCTUnwrap(db.services.flatMap(\.characteristics)
            .first { $0.characteristic.uuid.description.uppercased().contains("7E1F00A1") }?.characteristic.valueHandle)
        let bearers = try await p.openL2CAPChannels(psm: GATTDatabaseSnapshot.eattSPSM, count: 2,
                                                   parameters: CreditBasedChannelParameters(mtu: 512, mps: 247, initialCredits: 4))
        XCTAssertEqual(bearers.count, 2)
        let request: [UInt8] = [0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8)]
        async let first: Void = bearers[0].send(request)
        async let second: Void = bearers[1].send(request)
        _ = try await (first, second)
        for bearer in bearers {
            var it = bearer.makeAsyncIterator()
            let response = try await it.next()
            XCTAssertEqual(response, [0x0B] + Array("eatt read".utf8), "ATT_READ_RSP on the bearer that asked")
        }
        for bearer in bearers { await bearer.close() }
        await central.close()
    }

    static let rw = "8f3c0003-6c5a-4d2e-9b1f-2f0a1c3b4d5e"
    static let notify = "8f3c0006-6c5a-4d2e-9b1f-2f0a1c3b4d5e"

    /// Bumble 0.0.236 as the EATT client of `ble serve test --eatt`: after pairing it finds
    /// "EATT Supported" in Server Supported Features (Vol 3 Part G §7.4), opens two bearers on
    /// SPSM 0x0027, reads on both at once (each answered on its own bearer, Vol 3 Part F
    /// §3.2.11), subscribes on the first and gets the counter's notifications on an EATT bearer.
    func testBumbleIsAnEATTClientOfBleServeEatt() throws {
        let env = try InteropEnvironment.current()
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-eatt-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: bonds) }
        let serve = try ServeProcess(profile: "test", arguments: ["--eatt", "--bonds", bonds], environment: env)
        defer { serve.stop() }
        let client = try startPeer("eatt_client.py", arguments: ["--target", serve.address.description, "--bearers", "2",
                                                                  "--read", Self.rw, "--subscribe", Self.notify, "--count", "3"],
                                   environment: env)
        try client.waitForEvent("paired", timeout: 30)
        let features = try client.waitForEvent("features", timeout: 30)
        XCTAssertEqual(features.string("server"), "01", "EATT Supported")
        let eatt = try client.waitForEvent("eatt", timeout: 30)
        XCTAssertEqual(eatt.int("bearers"), 2)
        var readOn: Set<Int> = []
        for _ in 0..<2 {
            let read = try client.waitForEvent("read", timeout: 30)
            XCTAssertEqual(read.bytes("value"), Array("hello".utf8))
            if let bearer = read.int("bearer") { readOn.insert(bearer) }
        }
        XCTAssertEqual(readOn, [0, 1], "one answer on each bearer")
        for _ in 0..<3 {
            let notification = try client.waitForEvent("notification", timeout: 30)
            XCTAssertNotNil(notification.int("bearer"), "on an EATT bearer, not the unenhanced one: \(notification)")
            XCTAssertEqual(notification.bytes("value")?.count, 4, "the 32-bit counter")
        }
        try client.waitForEvent("done", timeout: 30)
        try serve.waitFor("subscription") { $0["notifications"] as? Bool == true }
    }

    /// `ble gatt` against `ble serve --eatt` finds our own Server Supported Features.
    func testBleGattSaysBleServeEattOffersEATT() throws {
        let env = try InteropEnvironment.current()
        let serve = try ServeProcess(profile: "battery", arguments: ["--eatt"], environment: env)
        defer { serve.stop() }
        let offered = try BLETool.run(["gatt", "\(serve.address)/random", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(offered.succeeded, "\(offered)")
        XCTAssertTrue(offered.stdout.contains("EATT: offered (Server Supported Features 0x01)"), offered.stdout)
    }

    /// Without `--eatt` the server says nothing of EATT and refuses SPSM 0x0027: Bumble's
    /// `connect_eatt` fails, while the unenhanced bearer served it as always.
    func testBleServeWithoutEattRefusesEnhancedBearers() throws {
        let env = try InteropEnvironment.current()
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-eatt-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: bonds) }
        let serve = try ServeProcess(profile: "test", arguments: ["--bonds", bonds], environment: env)
        defer { serve.stop() }
        let client = try startPeer("eatt_client.py", arguments: ["--target", serve.address.description, "--bearers", "1"], environment: env)
        try client.waitForEvent("paired", timeout: 30)
        let features = try client.waitForEvent("features", timeout: 30)
        XCTAssertNil(features.string("server"), "no Server Supported Features: \(features)")
        let error = try client.waitForEvent("error", timeout: 40)
        XCTAssertTrue(error.string("message")?.contains("SPSM_NOT_SUPPORTED") == true, "\(error)")
        XCTAssertFalse(client.events.contains { $0.name == "eatt" })
    }
}
