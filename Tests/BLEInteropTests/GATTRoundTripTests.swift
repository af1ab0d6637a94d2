import BLETestSupport
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The round-trip figure: ATT requests other than Exchange MTU from Connection Complete to
/// the first notification for `ble subscribe ADDRESS 2A37`, counted in the `--capture` btsnoop
/// (`ATTRoundTrips`): cold, and on a reconnection that finds the attribute cache valid
/// (`--gatt-cache`, Core spec Vol 3 Part G §2.5.2). Against the virtual radio's heart-rate demo
/// peripheral (no rig needed) and a Bumble heart-rate sensor over rootcanal.
final class GATTRoundTripTests: XCTestCase {
    /// The virtual radio's heart-rate demo peripheral (DemoPeripherals.lineup).
    static let virtualHeartRate = "00:5A:B1:00:00:03/public"

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-rt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    /// Runs `ble subscribe TARGET 2A37 --count 1` with a capture and counts its round trips.
    func subscribeOnce(_ target: String, hci: String, cache: URL?, in dir: URL, _ name: String) throws -> ATTRoundTrips {
        let file = dir.appendingPathComponent("\(name).btsnoop")
        var arguments = ["subscribe", target, "2A37", "--count", "1", "--timeout", "30", "--hci", hci, "--capture", file.path]
        if let cache { arguments += ["--gatt-cache", cache.path] }
        let result = try BLETool.run(arguments, environment: ["BLE_BONDS": dir.appendingPathComponent("bonds").path], timeout: 90)
        XCTAssertTrue(result.succeeded, "ble subscribe (\(name)): \(result)")
        let counted = try ATTRoundTrips(btsnoop: Array(try Data(contentsOf: file)))
        XCTAssertTrue(counted.connected && counted.notified, "\(name): \(counted)")
        return counted
    }

    func assertPrivate(_ directory: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".gatt") }
        XCTAssertEqual(names.count, 1, "one cache entry: \(names)", file: file, line: line)
        for name in names {
            var st = stat()
            XCTAssertEqual(stat(directory.appendingPathComponent(name).path, &st), 0)
            XCTAssertEqual(st.st_mode & 0o777, 0o600, "\(name) is private", file: file, line: line)
        }
    }

    func testSubscribeToTheVirtualHeartRateSensorColdThenFromTheCache() throws {
        let dir = try temporaryDirectory()
        let cache = dir.appendingPathComponent("gatt")
        let cold = try subscribeOnce(Self.virtualHeartRate, hci: "virtual", cache: cache, in: dir, "cold")
        XCTAssertLessThanOrEqual(cold.count, 5, "cold: \(cold)")
        try assertPrivate(cache)
        let warm = try subscribeOnce(Self.virtualHeartRate, hci: "virtual", cache: cache, in: dir, "reconnect")
        XCTAssertLessThanOrEqual(warm.count, 2, "reconnect with an unchanged Database Hash: \(warm)")
        print("round trips to the first notification, virtual radio: cold \(cold), reconnect \(warm)")
    }

    /// A corrupt cache entry is ignored (a typed error in the log, never a crash) and replaced
    /// by a fresh discovery's.
    func testACorruptCacheFileGivesAFreshDiscovery() throws {
        let dir = try temporaryDirectory()
        let cache = dir.appendingPathComponent("gatt")
        _ = try subscribeOnce(Self.virtualHeartRate, hci: "virtual", cache: cache, in: dir, "fill")
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: cache.path).first { $0.hasSuffix(".gatt") })
        let path = cache.appendingPathComponent(name)
        var bytes = Array(try Data(contentsOf: path))
        bytes = Array(bytes.prefix(bytes.count / 2)) + [0xFF, 0xFF, 0xFF]
        try Data(bytes).write(to: path)
        chmod(path.path, 0o600)
        let again = try subscribeOnce(Self.virtualHeartRate, hci: "virtual", cache: cache, in: dir, "corrupt")
        XCTAssertGreaterThan(again.count, 2, "the corrupt entry was not used: \(again)")
        let warm = try subscribeOnce(Self.virtualHeartRate, hci: "virtual", cache: cache, in: dir, "rewritten")
        XCTAssertLessThanOrEqual(warm.count, 2, "the fresh discovery replaced it: \(warm)")
    }

    func testSubscribeToABumbleHeartRateSensorColdThenFromTheCache() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", "BRT\(UInt32.random(in: 100_000...999_999))", "--interval", "0.2"],
                                   environment: env)
        let dir = try temporaryDirectory()
        let cache = dir.appendingPathComponent("gatt")
        let target = "\(sensor.address)/random"
        let cold = try subscribeOnce(target, hci: env.rootcanal, cache: cache, in: dir, "bumble-cold")
        XCTAssertLessThanOrEqual(cold.count, 5, "cold: \(cold)")
        try sensor.waitForEvent("disconnected", timeout: 20)
        let warm = try subscribeOnce(target, hci: env.rootcanal, cache: cache, in: dir, "bumble-reconnect")
        XCTAssertLessThanOrEqual(warm.count, 2, "reconnect with an unchanged Database Hash: \(warm)")
        print("round trips to the first notification, Bumble over rootcanal: cold \(cold), reconnect \(warm)")
    }

    /// Bumble as the client of our server: it enables robust caching (Client Supported Features
    /// 0x01, §7.2) and reads the Database Hash (§7.3) on two connections; the hash is the same
    /// both times and the same our own client reads, so a caching client can skip discovery.
    func testABumbleClientEnablesRobustCachingAndReadsAStableHashFromOurServer() throws {
        let env = try InteropEnvironment.current()
        let sensor = try ServeProcess(profile: "heart-rate", name: "HRC\(UInt32.random(in: 100_000...999_999))", environment: env)
        addTeardownBlock { sensor.stop() }
        var hashes: [String] = []
        for round in 0..<2 {
            let client = try startPeer("central.py", arguments: [
                "--target", sensor.address.description, "--read", "2B2A", "--write", "2B29=01", "--read", "2B29",
            ], environment: env)
            let hash = try client.waitForEvent("read", timeout: 30) { $0.string("uuid") == "2B2A" }
            hashes.append(try XCTUnwrap(hash.string("value")))
            try client.waitForEvent("wrote", timeout: 10) { $0.string("uuid") == "2B29" }
            try client.waitForEvent("done", timeout: 20)
            _ = client.waitForExit(timeout: 10)
            _ = try sensor.waitForCount("disconnected", count: round + 1, timeout: 20)
            if round == 0 { XCTAssertEqual(hashes[0].count, 32, "16 octets: \(hashes[0])") }
        }
        XCTAssertEqual(hashes[0], hashes[1], "the database did not change between connections")
        let ours = try BLETool.run(["read", "\(sensor.address)/random", "2B2A", "--json", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(ours.succeeded, "\(ours)")
        XCTAssertTrue(ours.stdout.contains("\"hex\":\"\(hashes[0])\""), "our client reads the same hash: \(ours.stdout)")
    }
}
