import BLEHCI
import BLEHost
import BLEWire
import XCTest
@testable import BLE

/// `Link.nextDeadline()` keeps each part's deadline until that part changes (the host asks after
/// every batch of frames). Whatever path a change takes, what it returns must be the deadline
/// computed afresh: the ATT transaction timeouts of every client bearer and the indication
/// confirmation timeouts of every server (Core Vol 3 Part F §3.3.3).
final class LinkDeadlineCacheTests: XCTestCase {
    private static let indicated = BluetoothUUID(0xBE01)

    private func makeLink(handle: UInt16 = 0x40) -> Link {
        let parameters = LinkParameters(interval: 24, latency: 0, supervisionTimeout: 400)
        return Link(id: UInt64(handle), handle: handle, peer: DeviceAddress(BDAddress(rawValue: 0xA0), type: .public), role: .central,
                    parameters: parameters,
                    clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30))),
                    server: ATTServer(), observation: LinkObservation(parameters: parameters))
    }

    /// What the link's parts say now, asked of each part directly (no cache).
    private func fresh(_ link: Link) -> Duration? {
        var next = earliest(link.clients.nextDeadline, link.server.nextDeadline)
        for server in link.enhancedServers.values { next = earliest(next, server.nextDeadline) }
        return next
    }

    /// A database with one indicatable characteristic, and its value and CCCD handles.
    private func database() throws -> (GATTServerDatabase, value: UInt16, cccd: UInt16) {
        var db = GATTServerDatabase(deviceName: "Test", appearance: 0)
        let handles = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBE00), characteristics: [
            GATTCharacteristicDefinition(uuid: Self.indicated, properties: [.read, .indicate], permissions: [.read], value: [0]),
        ]))
        let characteristic = try XCTUnwrap(handles[Self.indicated])
        return (db, characteristic.valueHandle, try XCTUnwrap(characteristic.cccdHandle))
    }

    /// Subscribes to indications through `server` (ATT Write Request on the CCCD, §3.4.5.1) and
    /// sends one at `now`: its confirmation is due 30 s later.
    private func indicate(_ server: inout ATTServer, _ db: inout GATTServerDatabase, value: UInt16, cccd: UInt16, now: Duration) {
        _ = server.receive([0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x02, 0x00], database: &db, security: .none, now: now)
        XCTAssertEqual(server.indicate(valueHandle: value, value: [1], id: 1, now: now, database: db, security: .none), .queued)
        XCTAssertNotNil(server.nextOutgoing(now: now))
    }

    func testTheClientDeadlineFollowsEveryWayTheBearersChange() {
        var link = makeLink()
        XCTAssertNil(link.nextDeadline())
        // A request through the bearer set starts its transaction timer.
        _ = link.clients.submit(ReadProcedure(handle: 3), id: 1, now: .seconds(1))
        XCTAssertEqual(link.nextDeadline(), .seconds(31))
        XCTAssertEqual(link.nextDeadline(), fresh(link), "asked again without a change")
        // Its response stops it.
        _ = link.clients.receive([0x0B, 0x55], on: .unenhanced, now: .seconds(2))
        XCTAssertNil(link.nextDeadline())
        // A request through the unenhanced bearer alone.
        _ = link.bearer.submit(ReadProcedure(handle: 5), id: 2, now: .seconds(4))
        XCTAssertEqual(link.nextDeadline(), .seconds(34))
        // An Enhanced ATT bearer with a transaction of its own; the earlier one wins.
        _ = link.clients.add(.enhanced(cid: 0x41), bearer: ATTClientBearer(mtu: 64, transactionTimeout: .seconds(30)), now: .seconds(5))
        _ = link.clients.submit(ReadProcedure(handle: 7), id: 3, now: .seconds(5))
        XCTAssertEqual(link.clients.bearer(running: 3), .enhanced(cid: 0x41))
        XCTAssertEqual(link.nextDeadline(), .seconds(34))
        _ = link.clients.receive([0x0B, 0x01], on: .unenhanced, now: .seconds(6))
        XCTAssertEqual(link.nextDeadline(), .seconds(35), "the enhanced bearer's transaction is now the earliest")
        // The whole set replaced.
        link.clients = ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30)))
        XCTAssertNil(link.nextDeadline())
        XCTAssertEqual(link.nextDeadline(), fresh(link))
    }

    func testTheServerDeadlineFollowsEveryWayTheServersChange() throws {
        var (db, value, cccd) = try database()
        var link = makeLink()
        XCTAssertNil(link.nextDeadline())
        // An indication on the unenhanced bearer, through `server`.
        indicate(&link.server, &db, value: value, cccd: cccd, now: .seconds(2))
        XCTAssertEqual(link.nextDeadline(), .seconds(32))
        // Its confirmation (§3.4.7.3), through `withServer`.
        _ = link.withServer(.unenhanced) { $0.receive([0x1E], database: &db, security: .none, now: .seconds(3)) }
        XCTAssertNil(link.nextDeadline())
        // An Enhanced ATT bearer's server with an indication outstanding.
        var enhanced = ATTServer.enhancedBearer(mtu: 64)
        indicate(&enhanced, &db, value: value, cccd: cccd, now: .seconds(4))
        link.enhancedServers[0x41] = enhanced
        XCTAssertEqual(link.nextDeadline(), .seconds(34))
        // Its indication times out: the bearer's server closes and has no deadline left.
        _ = link.withServer(.enhanced(cid: 0x41)) { $0.expire(now: .seconds(34)) }
        XCTAssertNil(link.nextDeadline())
        XCTAssertEqual(link.nextDeadline(), fresh(link))
    }

    func testTheTableTakesTheEarliestLinkAndSeesChangesMadeInPlace() {
        var table = LinkTable()
        table[0x40] = makeLink(handle: 0x40)
        table[0x41] = makeLink(handle: 0x41)
        XCTAssertNil(table.nextDeadline())
        table.withLink(0x41) { _ = $0.clients.submit(ReadProcedure(handle: 3), id: 1, now: .seconds(2)) }
        XCTAssertEqual(table.nextDeadline(), .seconds(32))
        table.withLink(0x40) { _ = $0.clients.submit(ReadProcedure(handle: 3), id: 2, now: .seconds(1)) }
        XCTAssertEqual(table.nextDeadline(), .seconds(31))
        table.withLink(0x40) { _ = $0.clients.receive([0x0B, 0x00], on: .unenhanced, now: .seconds(3)) }
        XCTAssertEqual(table.nextDeadline(), .seconds(32))
        _ = table.remove(0x41)
        XCTAssertNil(table.nextDeadline())
        // A link replaced wholesale carries its own (stale) cache state.
        var replaced = makeLink(handle: 0x40)
        _ = replaced.clients.submit(ReadProcedure(handle: 9), id: 3, now: .seconds(5))
        table[0x40] = replaced
        XCTAssertEqual(table.nextDeadline(), .seconds(35))
    }
}
