import BLE
import BLEWire
import Foundation
import XCTest

/// What this stack does of Enhanced ATT (Core spec Vol 3 Part G §5.3, §7.4) against Bumble
/// 0.0.236, whose `eatt_enabled` device sets "EATT Supported" in its Server Supported Features
/// and serves ATT on enhanced credit-based channels of SPSM 0x0027: `ble gatt` says whether a
/// peer offers EATT, and our enhanced channels carry ATT bearers to Bumble's server, each
/// answering its own request. (EATTClientInteropTests runs our GATT client on such bearers.)
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
        let run = try BLETool.run(["gatt", "\(eatt.address)/random", "--hci", env.rootcanal], timeout: 60)
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
}
