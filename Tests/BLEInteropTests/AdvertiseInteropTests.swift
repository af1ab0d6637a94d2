import Foundation
import XCTest

/// `ble advertise` on rootcanal (a controller with Bluetooth 5's extended advertising commands),
/// heard by a Bumble extended scanner (`peers/extended_scanner.py`): data no legacy
/// advertisement can carry (sent to the controller in fragments), the LE Coded PHY, periodic
/// advertising that Bumble syncs to, a connectable set Bumble connects to, several sets with
/// addresses of their own, a set's duration, and legacy PDUs through the extended commands.
final class AdvertiseInteropTests: XCTestCase {
    /// `count` octets of AD structures: Manufacturer Specific Data (company 0x0059) of at most
    /// 200 octets each, filled with counting bytes, so the data is well-formed at any length.
    func adStructures(_ count: Int, seed: UInt8 = 0) -> String {
        var bytes: [UInt8] = []
        var n = seed
        while bytes.count < count {
            let body = min(200, count - bytes.count - 2)
            if body < 2 {
                bytes += [1, 0x2A].prefix(count - bytes.count)
                break
            }
            bytes += [UInt8(body + 1), 0xFF, 0x59, 0x00] + (0..<(body - 2)).map { UInt8(truncatingIfNeeded: Int($0) + Int(n)) }
            n &+= 1
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Starts `ble advertise ARGUMENTS --json` and waits for its `sets` set lines.
    func advertise(_ arguments: [String], sets: Int = 1, _ env: InteropEnvironment) throws -> (BLEToolProcess, [[String: Any]]) {
        let tool = try BLEToolProcess(["advertise", "--json", "--hci", env.rootcanal] + arguments)
        addTeardownBlock { tool.stop() }
        var lines: [[String: Any]] = []
        for _ in 0..<sets { lines.append(try tool.waitFor("advertising", timeout: 30)) }
        return (tool, lines)
    }

    /// The Bumble scanner's "advertisement" events for `address`.
    func heard(_ address: String, arguments: [String] = [], _ env: InteropEnvironment) throws -> (PeerProcess, PeerEvent) {
        let scanner = try startPeer("extended_scanner.py", arguments: ["--target", address, "--until-found"] + arguments, environment: env)
        return (scanner, try scanner.waitForEvent("advertisement", timeout: 20))
    }

    func testBumbleHearsLongExtendedDataOnLE1MAndOnLECoded() throws {
        let env = try InteropEnvironment.current()
        for (phy, secondary, octets, primaryCode, secondaryCode) in [("1m", "1m", 490, 1, 1), ("coded", "2m", 300, 3, 2)] {
            let data = adStructures(octets)
            let (tool, lines) = try advertise(["--extended", "--data", data, "--phy", phy, "--secondary-phy", secondary], env)
            let set = try XCTUnwrap(lines.first)
            XCTAssertEqual(set["dataLength"] as? Int, octets)
            XCTAssertEqual(set["extended"] as? Bool, true)
            let address = try XCTUnwrap(set["address"] as? String)
            let (_, advertisement) = try heard(address, env)
            XCTAssertEqual(advertisement.string("data"), data, "\(phy): the whole \(octets) octets")
            XCTAssertEqual(advertisement.bool("legacy"), false)
            XCTAssertEqual(advertisement.bool("connectable"), false)
            XCTAssertEqual(advertisement.int("sid"), set["sid"] as? Int)
            XCTAssertEqual(advertisement.int("primary_phy"), primaryCode, phy)
            XCTAssertEqual(advertisement.int("secondary_phy"), secondaryCode, phy)
            XCTAssertEqual(tool.interrupt(), 0)
        }
    }

    func testBumbleSyncsToPeriodicAdvertising() throws {
        let env = try InteropEnvironment.current()
        let periodic = adStructures(300, seed: 7)
        let (tool, lines) = try advertise(["--extended", "--name", "PER", "--periodic-data", periodic, "--periodic-interval", "50"], env)
        let set = try XCTUnwrap(lines.first)
        XCTAssertEqual(set["periodicIntervalMs"] as? Double, 50)
        let address = try XCTUnwrap(set["address"] as? String)
        let sid = try XCTUnwrap(set["sid"] as? Int)
        let (scanner, _) = try heard(address, arguments: ["--sync", "--sid", "\(sid)", "--count", "3"], env)
        try scanner.waitForEvent("synced", timeout: 20)
        XCTAssertEqual(try scanner.waitForEvent("periodic", timeout: 20).string("data"), periodic, "the whole 300 octets of periodic data")
        XCTAssertEqual(tool.interrupt(), 0)
    }

    /// A connectable extended set: Bumble connects (the connection is the set's, LE Advertising
    /// Set Terminated), and the set advertises again for the next central.
    func testBumbleConnectsToAConnectableExtendedSetWhichAdvertisesAgain() throws {
        let env = try InteropEnvironment.current()
        let (tool, lines) = try advertise(["--extended", "--connectable", "--name", "CONN"], env)
        let set = try XCTUnwrap(lines.first)
        let address = try XCTUnwrap(set["address"] as? String)
        let (scanner, advertisement) = try heard(address, arguments: ["--connect"], env)
        XCTAssertEqual(advertisement.bool("connectable"), true)
        XCTAssertEqual(advertisement.bool("legacy"), false)
        try scanner.waitForEvent("connected", timeout: 20)
        _ = try tool.waitFor("connected", timeout: 20)
        let ended = try tool.waitFor("setTerminated", timeout: 20)
        XCTAssertEqual(ended["set"] as? Int, set["set"] as? Int)
        XCTAssertEqual(ended["restarting"] as? Bool, true)
        XCTAssertEqual(ended["central"] as? String, scanner.address.description)
        // Advertising again: a second scanner hears it while the first is still connected.
        _ = try heard(address, env)
        XCTAssertEqual(tool.interrupt(), 0)
    }

    /// `--sets 3`: three sets at once, each from its own static random address, all heard.
    func testSeveralSetsAdvertiseAtOnceFromTheirOwnAddresses() throws {
        let env = try InteropEnvironment.current()
        let data = adStructures(120, seed: 3)
        let (tool, lines) = try advertise(["--extended", "--sets", "3", "--data", data], sets: 3, env)
        let addresses = lines.compactMap { $0["address"] as? String }
        XCTAssertEqual(Set(addresses).count, 3, "\(lines)")
        XCTAssertEqual(Set(lines.compactMap { $0["sid"] as? Int }).count, 3, "each set its own SID")
        for address in addresses {
            XCTAssertEqual(UInt8(address.prefix(2), radix: 16).map { $0 >> 6 }, 0b11, "\(address) is static random")
            XCTAssertEqual(try heard(address, env).1.string("data"), data, address)
        }
        XCTAssertEqual(tool.interrupt(), 0)
    }

    /// `--duration`: the controller ends the set (Advertising Timeout), and the command then ends.
    func testADurationEndsTheSetAndTheCommand() throws {
        let env = try InteropEnvironment.current()
        let (tool, _) = try advertise(["--extended", "--name", "DUR", "--duration", "0.5"], env)
        let ended = try tool.waitFor("setTerminated", timeout: 20)
        XCTAssertEqual(ended["reason"] as? String, "duration ended")
        XCTAssertEqual(ended["restarting"] as? Bool, false)
        for _ in 0..<100 where tool.exitStatus == nil { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertEqual(tool.exitStatus, 0, "the command ends with its last set")
    }

    /// Without `--extended`: legacy PDUs (ADV_IND and its scan response) through the extended
    /// commands, heard as legacy advertisements.
    func testLegacyPDUsGoThroughTheExtendedCommands() throws {
        let env = try InteropEnvironment.current()
        let (tool, lines) = try advertise(["--connectable", "--name", "LEG", "--scan-response", "0409414243"], env)
        let set = try XCTUnwrap(lines.first)
        XCTAssertEqual(set["extended"] as? Bool, false)
        let address = try XCTUnwrap(set["address"] as? String)
        // Passively the ADV_IND; actively also the scan response (Bumble 0.0.236 then reports
        // the scan response alone).
        for (mode, wanted) in [("--passive", (false, "04094c4547")), ("--active", (true, "0409414243"))] {
            let scanner = try startPeer("extended_scanner.py", arguments: ["--target", address, "--duration", "3"] + (mode == "--passive" ? [mode] : []),
                                        environment: env)
            try scanner.waitForEvent("done", timeout: 30)
            let events = scanner.events.filter { $0.name == "advertisement" }
            XCTAssertTrue(events.contains { $0.bool("legacy") == true && $0.bool("connectable") == true && $0.bool("scan_response") == wanted.0
                    && $0.string("data") == wanted.1 }, "\(mode): \(events)")
        }
        XCTAssertEqual(tool.interrupt(), 0)
    }

    /// `ble serve sample --extended`: Bumble's sample central finds it by the service in the
    /// connectable extended set's data, connects and runs S2's steps; the set advertises again
    /// afterwards.
    func testBumbleSampleCentralAgainstServeSampleOnAnExtendedSet() throws {
        let env = try InteropEnvironment.current()
        let server = try ServeProcess(profile: "sample", name: "M5Stack", arguments: ["--extended"], environment: env)
        addTeardownBlock { server.stop() }
        let set = try server.waitFor("advertisingSet", timeout: 10)
        XCTAssertEqual(set["extended"] as? Bool, true)
        let central = try startPeer("sample_central.py", arguments: ["--number", "42", "--count", "2"], environment: env)
        try central.waitForEvent("found", timeout: 30)
        try central.waitForEvent("wrote", timeout: 30) { $0.string("text") == "Write Data 042" }
        try central.waitForEvent("done", timeout: 30)
        let ended = try server.waitFor("setTerminated", timeout: 10)
        XCTAssertEqual(ended["restarting"] as? Bool, true, "advertising again for the next central")
        try server.waitFor("disconnected", timeout: 20)
    }

    /// `ble serve sample --extended --phy coded`: a long-range set (LE Coded both ways); Bumble,
    /// initiating on LE 1M and LE Coded, connects to it.
    func testBumbleConnectsToServeOnTheCodedPHY() throws {
        let env = try InteropEnvironment.current()
        let server = try ServeProcess(profile: "sample", name: "M5Coded", arguments: ["--extended", "--phy", "coded"], environment: env)
        addTeardownBlock { server.stop() }
        XCTAssertEqual(try server.waitFor("advertisingSet", timeout: 10)["primaryPHY"] as? String, "coded")
        let (scanner, advertisement) = try heard(server.address.description, arguments: ["--connect", "--phy", "coded"], env)
        XCTAssertEqual(advertisement.int("primary_phy"), 3)
        XCTAssertEqual(advertisement.int("secondary_phy"), 3)
        XCTAssertEqual(advertisement.bool("connectable"), true)
        try scanner.waitForEvent("connected", timeout: 20)
        try server.waitFor("connected", timeout: 20)
    }

    /// What cannot be meant is a usage error (status 64) naming the option, before any controller.
    func testContradictoryOptionsAreUsageErrors() throws {
        let cases: [([String], String)] = [
            (["advertise", "--extended", "--connectable", "--scannable"], "connectable or scannable, not both"),
            (["advertise", "--phy", "coded"], "--phy needs --extended"),
            (["advertise", "--extended", "--phy", "2m"], "--phy takes 1m, coded"),
            (["advertise", "--scan-response", "020106"], "--scan-response needs --scannable"),
            (["advertise", "--extended", "--scannable", "--name", "X", "--scan-response", "020106"], "a scannable extended set has no advertising data"),
            (["advertise", "--extended", "--connectable", "--periodic-data", "020106"], "--periodic-data needs --extended"),
            (["advertise", "--periodic-interval", "50"], "--periodic-interval goes with --periodic-data"),
            (["advertise", "--data", "05ff59"], "--data: "),
            (["advertise", "--sets", "17"], "--sets expects 1...16"),
            (["advertise", "--max-events", "0"], "--max-events expects 1...255"),
            (["advertise", "--address", "40:00:00:00:00:01"], "--address expects a static random address"),
            (["sync", "C0:00:00:00:00:01/random", "16"], "SID must be 0...15"),
            (["serve", "battery", "--phy", "coded"], "--phy goes with --extended"),
            (["l2cap", "listen", "128", "--phy", "coded"], "--phy is for connect"),
        ]
        for (arguments, message) in cases {
            let result = try BLETool.run(arguments + ["--hci", "virtual"], timeout: 30)
            XCTAssertEqual(result.status, 64, "\(arguments): \(result)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
