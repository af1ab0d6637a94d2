import BLE
import BLETestSupport
import BLEWire
import Foundation
import XCTest

/// Our GATT client on Enhanced ATT (Core spec Vol 3 Part G §5.3, Part F §3.2.11) against Bumble
/// 0.0.236's EATT server (peers/eatt_peer.py): after pairing the client opens its bearers by
/// itself, runs independent reads in parallel on different bearers, takes notifications on
/// an enhanced bearer and reads several values with Read Multiple Variable Length (§4.8.5). A
/// peer without EATT gets no bearers and is served as before.
final class EATTClientInteropTests: XCTestCase {
    private static func characteristic(_ prefix: String, in db: GATTDatabaseSnapshot) throws -> GATTCharacteristic {
        try XCTUnwrap(db.services.flatMap(\.characteristics).first { $0.characteristic.uuid.description.uppercased().hasPrefix(prefix) }?.characteristic,
                      "no characteristic \(prefix)…")
    }

    /// The first `count` values of `stream`, or fewer once `limit` passes (a bound for a
    /// failing test, not a timing assumption).
    private static func values(_ stream: NotificationStream, count: Int, limit: Duration) async -> [[UInt8]] {
        await result(within: limit) {
            var got: [[UInt8]] = []
            for await v in stream {
                got.append(v)
                if got.count == count { break }
            }
            return got
        } ?? []
    }

    func testEnhancedBearersOpenAfterPairingAndCarryParallelReadsAndNotifications() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("eatt_peer.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random")), timeout: .seconds(15))
        let before = await p.enhancedATTBearerCount()
        XCTAssertEqual(before, 0, "no Enhanced ATT bearer on an unencrypted link (Vol 3 Part G §5.3.1)")
        _ = try await p.pair()
        let open = await p.enhancedATTBearersSettled()
        XCTAssertEqual(open, 2, "HostConfiguration.enhancedATTBearers (2) opened after encryption")

        let db = try await p.discoverDatabase(readValues: false)
        let gated = try Self.characteristic("7E1F00A2", in: db)
        let opener = try Self.characteristic("7E1F00A3", in: db)

        // Proof of parallelism: the peer answers the gated read only after the opener's read
        // has arrived. The gated read holds one bearer; the opener can only reach the peer on
        // another. With one bearer this deadlocks until the peer's bound, and the gated read
        // fails with Unlikely Error.
        let a = Task { try await p.readValue(for: gated) }
        let gatedArrived = try await peer.event("gated_read", timeout: 30)
        let b = try await p.readValue(for: opener)
        XCTAssertEqual(b, Array("B".utf8))
        let aValue = try await a.value
        XCTAssertEqual(aValue, Array("A after B".utf8))
        let openerArrived = try await peer.event("opener_read", timeout: 10)
        XCTAssertNotEqual(gatedArrived.fields["enhanced"]?.boolValue, openerArrived.fields["enhanced"]?.boolValue,
                          "one read on the unenhanced bearer, the other on an enhanced one: \(gatedArrived) \(openerArrived)")

        // Notifications on the enhanced bearers only (the peer sends none on 0x0004).
        let notifier = try Self.characteristic("7E1F00A4", in: db)
        let trigger = try Self.characteristic("7E1F00A5", in: db)
        let stream = await p.notifications(for: notifier)
        try await p.writeValue([0x01], for: trigger)
        let notified = try await peer.event("notified", timeout: 30)
        XCTAssertEqual(notified.fields["bearers"]?.intValue, 2)
        let got = await Self.values(stream, count: 2, limit: .seconds(30))
        XCTAssertEqual(got, [Array("on eatt".utf8), Array("on eatt".utf8)], "one notification per enhanced bearer")

        // Read Multiple Variable Length, the long value completed by Read Blob where it was cut:
        // 512 octets make the tuple list (528 octets) longer than ATT_MTU − 1 on every bearer
        // (each ATT_MTU ≤ our 517), so the cut and the Read Blob happen whichever bearer is free.
        let plain = try Self.characteristic("7E1F00A1", in: db)
        let long = try Self.characteristic("7E1F00A6", in: db)
        let values = try await p.readValues(of: [plain, long, opener])
        XCTAssertEqual(values, [Array("eatt read".utf8), (0..<512).map { UInt8($0 % 256) }, Array("B".utf8)])

        try await p.disconnect()
        await central.close()
    }

    func testAPeerWithoutEATTGetsNoBearersAndIsServedOnTheUnenhancedBearer() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random")), timeout: .seconds(15))
        _ = try await p.pair()
        let open = await p.enhancedATTBearersSettled()
        XCTAssertEqual(open, 0)
        let db = try await p.discoverDatabase(readValues: true)
        XCTAssertEqual(db.offersEATT, false)
        let name = try XCTUnwrap(db.services.flatMap(\.characteristics).first { $0.characteristic.uuid == BluetoothUUID(0x2A00) }?.characteristic)
        let values = try await p.readValues(of: [name, name])
        XCTAssertEqual(values.count, 2)
        XCTAssertEqual(values[0], values[1])
        try await p.disconnect()
        await central.close()
    }
}
