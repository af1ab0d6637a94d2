import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// Notifications, Multiple Handle Value Notifications and indications reaching our GATT client
/// when our server offers Enhanced ATT (Core spec Vol 3 Part F §3.2.11, §3.4.7; Vol 3 Part G
/// §5.3), on the virtual radio: the server sends updates on its best bearer, an enhanced one
/// (its ATT_MTU is the channel's, larger than the unenhanced bearer's 23), so the client must
/// take them there and confirm each indication on the bearer it came on.
final class EATTClientUpdatesWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFE60)
    static let first = BluetoothUUID(0xFE61)
    static let second = BluetoothUUID(0xFE62)
    static let indicated = BluetoothUUID(0xFE63)

    /// Up to `count` values of `stream`, fewer if `limit` of virtual time passes first.
    static func values(_ stream: NotificationStream, count: Int, within limit: Duration, _ world: VirtualWorld) async -> [[UInt8]] {
        await withTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask(executorPreference: world.clock.taskExecutor) {
                var got: [[UInt8]] = []
                for await v in stream {
                    got.append(v)
                    if got.count == count { break }
                }
                return got
            }
            group.addTask(executorPreference: world.clock.taskExecutor) {
                try? await world.clock.sleep(for: limit)
                return nil
            }
            let done = await group.next() ?? nil
            group.cancelAll()
            return done ?? []
        }
    }

    func testNotificationsAndIndicationsArriveOverEnhancedBearers() async throws {
        try await VirtualWorld.run { world in
            var server = HostConfiguration()
            server.offersEnhancedATT = true
            let (manager, _) = try await world.addPeripheralManager(name: "Updates", configuration: server)
            let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.first, properties: [.notify], permissions: [], value: [0]),
                GATTCharacteristicDefinition(uuid: Self.second, properties: [.notify], permissions: [], value: [0]),
                GATTCharacteristicDefinition(uuid: Self.indicated, properties: [.indicate], permissions: [], value: [0]),
            ]))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Updates").build())
            let own = await manager.address
            // The central's HCI is recorded: what crossed which bearer is checked in it.
            let device = await world.radio.addDevice()
            let capture = RecordingTransport(wrapping: device.transport, executor: world.clock.taskExecutor)
            let central = try await Central.open(transport: capture, clock: world.clock, configuration: HostConfiguration())
            let p = try await central.connect(try XCTUnwrap(own))
            _ = try await p.pair()
            let open = await p.enhancedATTBearersSettled()
            XCTAssertEqual(open, 2)
            // Client Supported Features 0x07: the server may send Multiple Handle Value Notifications.
            await p.completeCaching()

            var streams: [NotificationStream] = []
            for uuid in [Self.first, Self.second, Self.indicated] {
                let found = try await p.characteristic(uuid)
                let c = try XCTUnwrap(found)
                streams.append(await p.notifications(for: c))
                try await p.enableUpdates(for: c)
            }
            let (h1, h2, h3) = (try XCTUnwrap(handles.valueHandle(for: Self.first)), try XCTUnwrap(handles.valueHandle(for: Self.second)),
                                try XCTUnwrap(handles.valueHandle(for: Self.indicated)))

            let sent = await manager.updateValues([(h1, Array(repeating: 0xA1, count: 40)), (h2, [0xB2])])
            XCTAssertEqual(sent, .queued(centrals: 1))
            let firstValues = await Self.values(streams[0], count: 1, within: .seconds(5), world)
            let secondValues = await Self.values(streams[1], count: 1, within: .seconds(5), world)
            XCTAssertEqual(firstValues, [Array(repeating: 0xA1, count: 40)])
            XCTAssertEqual(secondValues, [[0xB2]])
            let afterNotifications = try BearerTrace(btsnoop: capture.btsnoop)
            XCTAssertEqual(afterNotifications.received(0x23).filter { $0 != 0x0004 }.count, 1,
                           "the two values came in one Multiple Handle Value Notification on an enhanced bearer")

            // More indications than bearers: some bearer carries two, and sends the second only
            // after the client confirmed the first on it (one indication at a time, §3.4.7.2).
            // All four are queued at once (updateValueWaiting returns once queued).
            for i in 1...4 { _ = try await manager.updateValueWaiting([UInt8(i)], forHandle: h3) }
            let indications = await Self.values(streams[2], count: 4, within: .seconds(60), world)
            // Across bearers their order is not kept (only per bearer), so compare as a set.
            XCTAssertEqual(indications.sorted { ($0.first ?? 0) < ($1.first ?? 0) }, [[1], [2], [3], [4]])
            // One round trip more: the last confirmation is out before the capture is read.
            let csf = try await p.characteristic(GATTUUID.clientSupportedFeatures)
            _ = try await p.readValue(for: try XCTUnwrap(csf))
            // Per bearer (our CID; a confirmation is sent to the peer's CID of the same
            // channel): indication, confirmation, indication, confirmation...
            let trace = try BearerTrace(btsnoop: capture.btsnoop)
            let perBearer = trace.indicationsAndConfirmations()
            XCTAssertEqual(perBearer.values.map { $0.filter { $0 == "I" }.count }.reduce(0, +), 4, "\(perBearer)")
            XCTAssertGreaterThanOrEqual(perBearer.values.map { $0.filter { $0 == "I" }.count }.max() ?? 0, 2,
                                        "some bearer carried two: \(perBearer)")
            XCTAssertTrue(perBearer.keys.contains { $0 != 0x0004 }, "indications went on enhanced bearers: \(perBearer)")
            for (cid, events) in perBearer {
                XCTAssertEqual(events, String(repeating: "IC", count: events.count / 2), "bearer 0x\(String(cid, radix: 16)): \(events)")
            }
            XCTAssertEqual(p.state, .connected)
            try await p.disconnect()
            await central.close()
            await manager.close()
        }
    }
}

/// What crossed each ATT bearer in a central's btsnoop capture: the bearer is our CID (0x0004,
/// or an Enhanced ATT channel's); PDUs we sent on a channel are mapped back from the peer's CID
/// through the L2CAP Credit Based Connection Request we sent and the Response we received
/// (Vol 3 Part A §4.25, §4.26: destination CIDs in the order of the source CIDs).
struct BearerTrace {
    /// (direction, our CID or the peer's for `.sent`, ATT opcode) in capture order.
    private var pdus: [(BTSnoop.Direction, UInt16, UInt8)] = []
    private var peerToOurs: [UInt16: UInt16] = [0x0004: 0x0004]

    init(btsnoop bytes: [UInt8]) throws {
        var requested: [UInt8: [UInt16]] = [:] // identifier -> our source CIDs
        for record in try BTSnoop.parse(bytes) {
            guard let frame = try? record.frame(), frame.type == .acl else { continue }
            let p = frame.payload
            // Only first fragments carry the L2CAP header (packet boundary 0b00 / 0b10).
            guard p.count >= 9, [0b00, 0b10].contains((p[1] >> 4) & 0x03) else { continue }
            let cid = UInt16(p[6]) | UInt16(p[7]) << 8
            func cids(from start: Int) -> [UInt16] {
                stride(from: start, to: p.count - 1, by: 2).map { UInt16(p[$0]) | UInt16(p[$0 + 1]) << 8 }
            }
            switch cid {
            case 0x0005 where p.count >= 20:
                if record.direction == .sent, p[8] == 0x17 { requested[p[9]] = cids(from: 20) }
                if record.direction == .received, p[8] == 0x18, let ours = requested[p[9]] {
                    for (peer, local) in zip(cids(from: 20), ours) where peer != 0 { peerToOurs[peer] = local }
                }
            case 0x0004:
                pdus.append((record.direction, cid, p[8]))
            case 0x0040...:
                // K-frame: the first carries the 2-octet SDU Length before the ATT PDU.
                if p.count >= 11 { pdus.append((record.direction, cid, p[10])) }
            default:
                break
            }
        }
    }

    private func ours(_ d: BTSnoop.Direction, _ cid: UInt16) -> UInt16 { d == .sent ? peerToOurs[cid] ?? cid : cid }

    /// Our CIDs on which a PDU with `opcode` was received, one per PDU.
    func received(_ opcode: UInt8) -> [UInt16] {
        pdus.filter { $0.0 == .received && $0.2 == opcode }.map(\.1)
    }

    /// Per bearer, "I" for each Handle Value Indication received and "C" for each Handle Value
    /// Confirmation sent, in order.
    func indicationsAndConfirmations() -> [UInt16: String] {
        var out: [UInt16: String] = [:]
        for (d, cid, opcode) in pdus {
            if d == .received, opcode == 0x1D { out[cid, default: ""] += "I" }
            if d == .sent, opcode == 0x1E { out[ours(d, cid), default: ""] += "C" }
        }
        return out
    }
}
