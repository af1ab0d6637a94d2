import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// Robust caching on the server, Core spec Vol 3 Part G §2.5.2.1, one test per transition of a
/// client's change awareness. The database is the built-in one: Service Changed at 0x0008 (its
/// CCCD 0x0009), Client Supported Features at 0x000B, Database Hash at 0x000D.
final class GATTServerChangeAwarenessTests: XCTestCase {
    func harness(robustCaching: Bool) -> GATTServerHarness {
        var h = GATTServerHarness(database: GATTServerDatabase(deviceName: "AB", appearance: 0))
        if robustCaching {
            h.run(["C: 12 0b00 01", "S: 13"])
            XCTAssertTrue(h.server.robustCachingEnabled)
        }
        return h
    }

    /// Aware at connection → unaware on a change → Database Out Of Sync → the next request is
    /// served (the client is aware again).
    func testAChangeUnawareClientGetsOutOfSyncOnceThenIsServed() {
        var h = harness(robustCaching: true)
        XCTAssertTrue(h.server.isChangeAware, "an untrusted client starts each connection change-aware")
        h.run(["C: 0a 0300", "S: 0b 4142"])
        h.server.databaseChanged()
        XCTAssertFalse(h.server.isChangeAware)
        h.run(["C: 0a 0300", "S: 01 0a 0000 12"])
        h.run(["C: 0a 0300", "S: 0b 4142"])
        XCTAssertTrue(h.server.isChangeAware)
    }

    /// Reading the Database Hash is answered while unaware, and the request after it is served.
    func testReadingTheHashIsAnsweredAndTheNextRequestIsServed() throws {
        var h = harness(robustCaching: true)
        h.server.databaseChanged()
        h.send(hexBytes("08 0100 ffff 2a2b"))
        let answer = try XCTUnwrap(h.sent.first)
        h.sent.removeAll()
        XCTAssertEqual(answer.prefix(4), [0x09, 0x12, 0x0D, 0x00], "a Read By Type Response with the hash")
        XCTAssertEqual(Array(answer.dropFirst(4)), try h.database.databaseHashCharacteristicValue())
        XCTAssertFalse(h.server.isChangeAware)
        h.run(["C: 0a 0300", "S: 0b 4142"])
        XCTAssertTrue(h.server.isChangeAware)
    }

    /// A change-unaware client's commands are ignored.
    func testCommandsOfAChangeUnawareClientAreIgnored() {
        var h = GATTServerHarness(database: GATTServerDatabase(deviceName: "AB", appearance: 0, deviceNameWritable: true))
        h.run(["C: 12 0b00 01", "S: 13"])
        h.server.databaseChanged()
        h.send(hexBytes("52 0300 5a5a"))
        XCTAssertTrue(h.sent.isEmpty)
        XCTAssertFalse(h.server.isChangeAware)
        h.run(["C: 0a 0300", "S: 01 0a 0000 12", "C: 0a 0300", "S: 0b 4142"])
    }

    /// Without robust caching the server never answers Database Out Of Sync.
    func testWithoutRobustCachingNothingIsRefused() {
        var h = harness(robustCaching: false)
        h.server.databaseChanged()
        h.run(["C: 0a 0300", "S: 0b 4142"])
    }

    /// Confirming a Service Changed indication makes the client aware.
    func testConfirmingServiceChangedMakesTheClientAware() throws {
        var h = harness(robustCaching: true)
        h.run(["C: 12 0900 0200", "S: 13"])
        h.server.databaseChanged()
        XCTAssertEqual(h.indicate(valueHandle: 0x0008, value: [0x01, 0x00, 0xFF, 0xFF], id: 7, now: h.now), .queued)
        XCTAssertEqual(h.server.nextOutgoing()?.hexString.lowercased(), "1d08000100ffff")
        h.send([0x1E])
        XCTAssertTrue(h.server.isChangeAware)
        h.run(["C: 0a 0300", "S: 0b 4142"])
    }

    /// A bonded client's state is put back as it was left (§2.5.2.1: it persists).
    func testABondedClientsStateIsRestored() {
        var h = harness(robustCaching: true)
        h.server.databaseChanged()
        h.server.restoreChangeAwareness(false)
        XCTAssertFalse(h.server.isChangeAware)
        h.server.restoreChangeAwareness(true)
        XCTAssertTrue(h.server.isChangeAware, "a bonded client's state is restored as it was left")
    }
}
