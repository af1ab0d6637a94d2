import BLE
import Foundation
import XCTest

/// `ble sync` on rootcanal against a Bumble periodic advertiser (`peers/extended_advertiser.py
/// --periodic-length`): the sync is made from the set's address and SID, and each periodic
/// advertisement of the train is printed whole, following the advertiser's data changes.
/// (Bumble 0.0.236 sends periodic data in one command, so its trains hold at most 252 octets;
/// `ble advertise`'s longer periodic data is heard by Bumble in `AdvertiseInteropTests`.)
final class PeriodicSyncInteropTests: XCTestCase {
    func testSyncPrintsThePeriodicTrainAndFollowsItsChanges() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("extended_advertiser.py", arguments: ["--name", "PSYNC", "--sid", "6", "--length", "60",
                                                                        "--periodic-length", "200", "--periodic-change", "0.5"], environment: env)
        let first = try XCTUnwrap(try peer.waitForEvent("advertising").string("periodic"))
        let sync = try BLEToolProcess(["sync", "\(peer.address)/random", "6", "--json", "--hci", env.rootcanal])
        addTeardownBlock { sync.stop() }
        let synced = try sync.waitFor("synced", timeout: 30)
        XCTAssertEqual(synced["address"] as? String, peer.address.description)
        XCTAssertEqual(synced["sid"] as? Int, 6)
        XCTAssertEqual(synced["intervalMicroseconds"] as? Int, 50_000)
        // Two changes of the advertiser's data, each then heard whole.
        var sent = [first]
        for _ in 0..<2 {
            let changed = try XCTUnwrap(try peer.waitForEvent("periodic", timeout: 20).string("data"))
            sent.append(changed)
            let heard = try sync.waitFor("periodic", timeout: 20) { $0["data"] as? String == changed }
            XCTAssertEqual(heard["length"] as? Int, 200)
            XCTAssertEqual(heard["truncated"] as? Bool, false)
        }
        XCTAssertEqual(sync.interrupt(), 0, "Ctrl-C ends the sync, then the command")
        sent += peer.events.filter { $0.name == "periodic" }.compactMap { $0.string("data") }
        let heard = sync.events.filter { $0["event"] as? String == "periodic" }.compactMap { $0["data"] as? String }
        XCTAssertTrue(heard.allSatisfy(Set(sent).contains), "a report the advertiser never sent: \(heard.filter { !sent.contains($0) })")
    }

    /// `--count`: the command ends by itself after that many.
    func testSyncStopsAfterCount() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("extended_advertiser.py", arguments: ["--name", "PCOUNT", "--sid", "3", "--length", "40", "--periodic-length", "31"],
                                 environment: env)
        let periodic = try XCTUnwrap(try peer.waitForEvent("advertising").string("periodic"))
        let result = try BLETool.run(["sync", "\(peer.address)/random", "3", "--count", "3", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.first?.hasPrefix("synced to \(peer.address)/random SID 3 on LE 1M") == true, result.stdout)
        XCTAssertEqual(lines.filter { $0.hasPrefix("31 octets \(periodic)") }.count, 3, result.stdout)
    }

    /// A set that is not there: the attempt is cancelled after --timeout and the command fails.
    func testSyncToNobodyTimesOut() throws {
        let env = try InteropEnvironment.current()
        let result = try BLETool.run(["sync", "C9:00:00:00:00:01/random", "1", "--timeout", "1.5", "--hci", env.rootcanal], timeout: 60)
        XCTAssertFalse(result.succeeded)
        XCTAssertTrue(result.stderr.contains("timed out"), result.stderr)
    }

    /// `Central.syncToPeriodicAdvertising(ofAnyOf:)` through rootcanal's Periodic Advertiser List:
    /// two Bumble trains listed, a sync to one of them, its advertisements its own.
    func testASyncToAnyOfTwoTrainsThroughThePeriodicAdvertiserList() async throws {
        let env = try InteropEnvironment.current()
        let first = try startPeer("extended_advertiser.py", arguments: ["--name", "PLA", "--sid", "2", "--length", "40", "--periodic-length", "20"],
                                  environment: env)
        let second = try startPeer("extended_advertiser.py", arguments: ["--name", "PLB", "--sid", "3", "--length", "40", "--periodic-length", "30"],
                                   environment: env)
        let trains = [first.address.description: try XCTUnwrap(try first.waitForEvent("advertising").string("periodic")),
                      second.address.description: try XCTUnwrap(try second.waitForEvent("advertising").string("periodic"))]
        let central = try await Central.open(spec: env.rootcanal)
        func random(_ text: String) throws -> DeviceAddress {
            DeviceAddress(try XCTUnwrap(BDAddress(string: text)), type: .random)
        }
        let sync = try await central.syncToPeriodicAdvertising(ofAnyOf: [(try random(first.address.description), 2), (try random(second.address.description), 3)],
                                                               keepScanning: true)
        let found = sync.advertiser.address.description
        XCTAssertNotNil(trains[found], "synced to \(found), not a listed one")
        XCTAssertEqual(sync.sid, found == first.address.description ? 2 : 3)
        var reports = sync.makeAsyncIterator()
        let advertisement = try await reports.next()
        XCTAssertEqual(advertisement?.bytes.map { String(format: "%02x", $0) }.joined(), trains[found])
        await sync.terminate()
        await central.close()
    }
}
