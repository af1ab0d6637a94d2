import BLEProfiles
import BLEWire
import Foundation
import XCTest

/// The rootcanal interop tests' flows on a third controller implementation: Google Bumble's own
/// Python LE controller (`bumble.controller.Controller`, two of them on one
/// `bumble.link.LocalLink`, see ``BumbleControllers``). Our `ble` runs on one controller, a
/// Bumble peer script on the other; only the controller differs from EchoInteropTests,
/// SampleInteropTests, HeartRateInteropTests, AccelerometerInteropTests,
/// CentralCommandInteropTests and PeripheralInteropTests.
///
/// What Bumble's controller does differently (docs in the report of the change that added this):
/// Read BD_ADDR answers 00:00:00:00:00:00 (no public address), so `ble`'s centrals go on the air
/// with their stored static random identity; advertising reports are always extended ones (also
/// for the legacy scan commands), RSSI is always -50 and a "scan response" repeats the
/// advertising data, so nothing here checks scan responses or RSSI gates.
final class BumbleControllerInteropTests: XCTestCase {
    static let custom = "7e1f0001-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let long = "7e1f0002-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let rw = "7e1f0003-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let notify = "7e1f0004-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let indicate = "7e1f0005-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let wnr = "7e1f0006-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let included = "7e1f0007-8d0b-4c1e-9a00-5b1e00c0ffee"

    func uniqueName(_ prefix: String) -> String { prefix + String(UInt32.random(in: 100_000...999_999)) }

    func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    func jsonObject(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    func jsonLines(_ text: String) throws -> [[String: Any]] { try lines(text).map(jsonObject) }

    /// `ble arguments… --hci <our Bumble controller>`.
    func ble(_ arguments: [String], _ c: BumbleControllers, timeout: TimeInterval = 60) throws -> ProcessResult {
        try BLETool.run(arguments + ["--hci", c.ours.rootcanal], timeout: timeout)
    }

    /// `ble serve PROFILE --json` on our Bumble controller, stopped in teardown.
    func serve(_ profile: String, name: String, arguments: [String] = [], _ c: BumbleControllers) throws -> ServeProcess {
        let process = try ServeProcess(profile: profile, name: name, arguments: arguments, environment: c.ours)
        addTeardownBlock { process.stop() }
        return process
    }

    /// A file of `count` bytes (every byte value) in `directory`, removed after the test.
    func temporaryFile(_ count: Int, in directory: URL = FileManager.default.temporaryDirectory) throws -> (URL, Data) {
        var state: UInt32 = 0x2545_F491
        let bytes = (0..<count).map { _ -> UInt8 in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
        let url = directory.appendingPathComponent("bumble-ctl-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).bin")
        try Data(bytes).write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return (url, Data(bytes))
    }

    // MARK: S1 echo and image over the framed stream

    /// Bumble's echo client against `ble serve echo --files`: a short text, a long one, a 30 kB
    /// file by URL (byte-exact), a malformed header and recovery after it.
    func testS1BumbleEchoClientAgainstServeEcho() throws {
        let c = try startBumbleControllers()
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("bumble-ctl-echo-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: files) }
        let server = try serve("echo", name: "EchoServer", arguments: ["--files", files.path], c)
        let (file, contents) = try temporaryFile(30_000, in: files)
        let output = file.appendingPathExtension("copy")
        let long = String(repeating: "a longer text than one write ", count: 20)
        let client = try startPeer("echo_client.py", arguments: [
            "--target", server.address.description, "--text", "hello", "--text", long,
            "--url", file.absoluteString, "--raw", "5430303078303030", "--text", "after the error",
            "--output", output.path, "--timeout", "90",
        ], environment: c.theirs)
        XCTAssertEqual(try client.waitForEvent("reply", timeout: 60).string("text"), "You said: hello")
        let second = try client.waitForEvent("reply", timeout: 30)
        XCTAssertEqual(second.string("text"), "You said: " + long)
        XCTAssertGreaterThan(second.int("notifications") ?? 0, 1, "the long echo spans notifications")
        let image = try client.waitForEvent("reply", timeout: 60)
        XCTAssertEqual(image.string("code"), "I")
        XCTAssertEqual(image.int("size"), contents.count)
        XCTAssertEqual(try Data(contentsOf: output), contents, "byte-exact")
        let error = try client.waitForEvent("reply", timeout: 30)
        XCTAssertTrue(error.string("text")?.hasPrefix("error: framed stream: size field \"000x000\"") ?? false, "\(error)")
        XCTAssertEqual(try client.waitForEvent("reply", timeout: 30).string("text"), "You said: after the error")
        try client.waitForEvent("done", timeout: 30)
        XCTAssertEqual(server.count("frame"), 4)
        try server.waitFor("fetched") { $0["size"] as? Int == contents.count }
        try server.waitForCount("reply", count: 5)
    }

    /// `ble echo` (scan, connect, one reply; then a long text at ATT_MTU 23 as JSON) and
    /// `ble fetch` of a 100 kB file against Bumble's echo server.
    func testS1BleEchoAndFetchAgainstBumbleEchoServer() throws {
        let c = try startBumbleControllers()
        let peer = try startPeer("echo_server.py", environment: c.theirs)
        let result = try ble(["echo", "hello from swift", peer.address.description], c, timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = lines(result.stdout)
        XCTAssertEqual(out.map { String($0.prefix(while: { $0 != " " })) },
                       ["poweredOn", "scanning", "discovered", "connecting", "connected", "sending", "reply", "closed", "You"], result.stdout)
        XCTAssertEqual(out.last, "You said: hello from swift")
        XCTAssertEqual(try peer.waitForEvent("frame", timeout: 10).string("text"), "hello from swift")

        let long = String(repeating: "spans several writes ", count: 8)
        let json = try ble(["echo", long, peer.address.description, "--mtu", "23", "--json"], c, timeout: 120)
        XCTAssertTrue(json.succeeded, "\(json)")
        XCTAssertEqual(try jsonObject(json.stdout)["reply"] as? String, "You said: " + long)

        let (file, contents) = try temporaryFile(100_000)
        let saved = file.appendingPathExtension("fetched")
        addTeardownBlock { try? FileManager.default.removeItem(at: saved) }
        let fetch = try ble(["fetch", file.absoluteString, "-o", saved.path, peer.address.description, "--json"], c, timeout: 180)
        XCTAssertTrue(fetch.succeeded, "\(fetch)")
        XCTAssertEqual(try jsonObject(fetch.stdout)["bytes"] as? Int, contents.count)
        XCTAssertEqual(try Data(contentsOf: saved), contents, "byte-exact")
    }

    // MARK: S2 sample central

    func testS2BumbleSampleCentralAgainstServeSample() throws {
        let c = try startBumbleControllers()
        let server = try serve("sample", name: "M5Stack", c)
        let central = try startPeer("sample_central.py", arguments: [
            "--target", server.address.description, "--number", "42", "--count", "3",
        ], environment: c.theirs)
        XCTAssertEqual(try central.waitForEvent("read", timeout: 30).string("text"), "Hello World")
        try central.waitForEvent("wrote") { $0.string("text") == "Write Data 042" }
        XCTAssertEqual(try central.waitForEvent("read").string("text"), "Write Data 042", "the write replaced the value")
        try central.waitForEvent("subscribed")
        var texts: [String] = []
        for _ in 0..<3 { texts.append(try central.waitForEvent("notification", timeout: 10).string("text") ?? "") }
        XCTAssertEqual(texts, ["Notify Data 001", "Notify Data 002", "Notify Data 003"])
        try central.waitForEvent("done", timeout: 30)
        XCTAssertEqual(try server.waitFor("write")["utf8"] as? String, "Write Data 042")
        try server.waitForCount("notified", count: 3)
        try server.waitFor("disconnected")
    }

    func testS2BleSampleAgainstBumbleSamplePeripheral() throws {
        let c = try startBumbleControllers()
        let peer = try startPeer("sample_peripheral.py", environment: c.theirs)
        let result = try ble(["sample", peer.address.description, "--number", "7", "--count", "3"], c)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = lines(result.stdout)
        XCTAssertEqual(out.map { String($0.prefix(1)) }, ["1", "2", "3", "4", "5", "5", "6", "7", "8", "9", "9", "9", "8", " "], result.stdout)
        XCTAssertEqual(out.first, "1 state          poweredOn")
        XCTAssertEqual(out[6], "6 read           \(SampleInteropTests.readWrite): 48656c6c6f20576f726c64 \"Hello World\"")
        XCTAssertTrue(out[7].contains("\"Write Data 007\" with response; reads back"), out[7])
        XCTAssertTrue(out[11].hasSuffix("\"Notify Data 003\""), out[11])
        XCTAssertEqual(out.last, "  disconnected")
        XCTAssertEqual(try peer.waitForEvent("write", timeout: 10).string("text"), "Write Data 007")
        XCTAssertEqual(try peer.waitForEvent("disconnected", timeout: 10).int("reason"), 19)
    }

    // MARK: S3 heart rate

    func testS3BumbleMonitorAgainstServeHeartRate() throws {
        let c = try startBumbleControllers()
        let sensor = try serve("heart-rate", name: uniqueName("HR"), c)
        let monitor = try startPeer("heart_rate_monitor.py", arguments: ["--target", sensor.address.description, "--count", "24"], environment: c.theirs)
        let location = try monitor.waitForEvent("read", timeout: 30)
        XCTAssertEqual(location.string("location"), "chest")
        try monitor.waitForEvent("wrote", timeout: 10) { $0.string("value") == "01" }
        XCTAssertEqual(try monitor.waitForEvent("write_error", timeout: 10).int("error"), 0x80, "Control Point Value Not Supported")
        var flags: Set<Int> = []
        for i in 0..<24 {
            let event = try monitor.waitForEvent("measurement", timeout: 20)
            let expected = HeartRateVariantCycle.measurement(at: UInt64(i), energyExpended: UInt16(i))
            XCTAssertEqual(event.string("value"), expected.encoded().hexString, "measurement \(i)")
            flags.insert(event.int("flags") ?? -1)
        }
        XCTAssertEqual(flags.count, 24, "every flag combination: \(flags.sorted())")
        try monitor.waitForEvent("done", timeout: 20)
        try sensor.waitFor("disconnected", timeout: 20)
    }

    func testS3BleHeartRateAgainstBumbleSensor() throws {
        let c = try startBumbleControllers()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", uniqueName("BHR"), "--interval", "0.2"], environment: c.theirs)
        let result = try ble(["heart-rate", "\(sensor.address)/random", "--count", "24", "--json"], c, timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        let received = try jsonLines(result.stdout)
        XCTAssertEqual(received.count, 24, result.stdout)
        let sent = sensor.events.filter { $0.name == "measurement" }
        XCTAssertGreaterThanOrEqual(sent.count, 24)
        for (i, (ours, theirs)) in zip(received, sent).enumerated() {
            XCTAssertEqual(ours["bpm"] as? Int, theirs.int("bpm"), "bpm of \(i)")
            XCTAssertEqual(ours["energyKJ"] as? Int, theirs.int("energyKJ"), "energy of \(i)")
        }
        XCTAssertEqual(Set(sent.prefix(24).compactMap { $0.int("variant") }).count, 24, "the sensor went through every variant")
    }

    // MARK: S4 accelerometer

    func testS4BumbleCentralAgainstServeAccel() throws {
        let c = try startBumbleControllers()
        let peripheral = try serve("accel", name: uniqueName("BLE"), c)
        let central = try startPeer("accel_central.py", arguments: [
            "--target", peripheral.address.description, "--read", "--write", "01", "--count", "10",
        ], environment: c.theirs)
        XCTAssertEqual(try central.waitForEvent("read", timeout: 30).string("value"), String(repeating: "00", count: 12))
        XCTAssertEqual(try central.waitForEvent("write_error", timeout: 10).int("error"), 0x03, "Write Not Permitted")
        for i in 0..<10 {
            let sample = try AccelerometerSample(decoding: try XCTUnwrap(try central.waitForEvent("sample", timeout: 10).bytes("value")))
            XCTAssertEqual(Double(sample.z), 1, accuracy: 0.5, "sample \(i): simulated gravity on z")
        }
        try central.waitForEvent("done", timeout: 20)
        try peripheral.waitFor("subscribed") { $0["subscribers"] as? Int == 1 }
        try peripheral.waitFor("unsubscribed") { $0["subscribers"] as? Int == 0 }
    }

    func testS4BleAccelAgainstBumbleAccelerometer() throws {
        let c = try startBumbleControllers()
        let accel = try startPeer("accel_peripheral.py", arguments: ["--name", uniqueName("BLE")], environment: c.theirs)
        let result = try ble(["accel", "\(accel.address)/random", "--count", "10", "--json"], c)
        XCTAssertTrue(result.succeeded, "\(result)")
        let received = try jsonLines(result.stdout)
        XCTAssertEqual(received.count, 10, result.stdout)
        let sent = accel.events.filter { $0.name == "sample" }
        for (i, (ours, theirs)) in zip(received, sent).enumerated() {
            for axis in ["x", "y", "z"] {
                XCTAssertEqual((ours[axis] as? Double).map(Float.init), theirs[axis]?.doubleValue.map(Float.init), "\(axis) of sample \(i)")
            }
        }
    }

    // MARK: ble gatt / read / write / subscribe against a Bumble peripheral

    func testBleGattDumpsTheBumblePeripheral() throws {
        let c = try startBumbleControllers()
        let peer = try startPeer("peripheral.py", environment: c.theirs)
        let result = try ble(["gatt", "\(peer.address)/random", "--json"], c)
        XCTAssertTrue(result.succeeded, "\(result)")
        let services = try XCTUnwrap(try jsonObject(result.stdout)["services"] as? [[String: Any]])
        XCTAssertEqual(services.compactMap { $0["uuid"] as? String }, ["1800", "1801", "180D", "180F", Self.custom])
        let custom = services[4]
        XCTAssertEqual((custom["includes"] as? [[String: Any]])?.first?["uuid"] as? String, Self.included)
        let characteristics = try XCTUnwrap(custom["characteristics"] as? [[String: Any]])
        XCTAssertEqual(characteristics.compactMap { $0["uuid"] as? String }, [Self.long, Self.rw, Self.notify, Self.indicate, Self.wnr])
        XCTAssertEqual((characteristics[0]["value"] as? [String: Any])?["hex"] as? String, (0..<512).map { String(format: "%02x", $0 % 256) }.joined())
    }

    /// `ble read` (the address type learned by a scan; a long read), `ble write` of 300 bytes at
    /// ATT MTU 23 (prepared writes) read back, a Write Command, and an ATT error.
    func testBleReadAndWriteAgainstTheBumblePeripheral() throws {
        let c = try startBumbleControllers()
        let peer = try startPeer("peripheral.py", environment: c.theirs)
        let read = try ble(["read", peer.address.description, Self.long, "--json"], c)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertEqual(try jsonObject(read.stdout)["hex"] as? String, (0..<512).map { String(format: "%02x", $0 % 256) }.joined())

        let value = (0..<300).map { String(format: "%02x", ($0 * 7) % 256) }.joined()
        let write = try ble(["write", "\(peer.address)/random", Self.rw, value, "--hex", "--mtu", "23"], c)
        XCTAssertTrue(write.succeeded, "\(write)")
        XCTAssertEqual(try peer.waitForEvent("write", timeout: 10) { $0.string("method") == "prepared" }.int("length"), 300)
        let back = try ble(["read", "\(peer.address)/random", Self.rw, "--json"], c)
        XCTAssertEqual(try jsonObject(back.stdout)["hex"] as? String, value)

        let command = try ble(["write", "\(peer.address)/random", Self.wnr, "0102ff", "--hex", "--without-response"], c)
        XCTAssertTrue(command.succeeded, "\(command)")
        XCTAssertEqual(try peer.waitForEvent("write", timeout: 10) { $0.string("method") == "command" }.string("value"), "0102ff")

        let refused = try ble(["read", "\(peer.address)/random", Self.wnr], c)
        XCTAssertEqual(refused.status, 1, "\(refused)")
        XCTAssertTrue(refused.stderr.contains("Read Not Permitted (0x02)"), refused.stderr)
    }

    func testBleSubscribeToNotificationsAndIndications() throws {
        let c = try startBumbleControllers()
        let peer = try startPeer("peripheral.py", environment: c.theirs)
        let notified = try ble(["subscribe", "\(peer.address)/random", Self.notify, "--count", "5", "--json"], c)
        XCTAssertTrue(notified.succeeded, "\(notified)")
        XCTAssertEqual(try jsonLines(notified.stdout).compactMap { $0["hex"] as? String }, ["01000000", "02000000", "03000000", "04000000", "05000000"])
        let indicated = try ble(["subscribe", "\(peer.address)/random", Self.indicate, "--count", "3", "--json"], c)
        XCTAssertTrue(indicated.succeeded, "\(indicated)")
        XCTAssertEqual(try jsonLines(indicated.stdout).compactMap { $0["hex"] as? String }, ["01000000", "02000000", "03000000"])
        for counter in 1...3 { try peer.waitForEvent("indicated", timeout: 10) { $0.int("counter") == counter } }
    }

    // MARK: ble serve against a Bumble central

    func testBumbleCentralAgainstServe() throws {
        let c = try startBumbleControllers()
        let peripheral = try serve("test", name: "SwiftPeer", c)
        let service = PeripheralInteropTests.service, long = PeripheralInteropTests.long, rw = PeripheralInteropTests.rw
        let written = String(repeating: "c3", count: 300)
        let central = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description,
            "--read", long, "--read", rw, "--read", PeripheralInteropTests.writeOnly,
            "--write", "\(rw)=\(written)",
            "--subscribe", PeripheralInteropTests.notify, "--subscribe", PeripheralInteropTests.indicate, "--count", "3",
        ], environment: c.theirs)
        XCTAssertEqual(try central.waitForEvent("discovered", timeout: 30).int("services"), 3)
        XCTAssertEqual(central.events.filter { $0.name == "service" }.compactMap { $0.string("uuid") }, ["1800", "1801", service])
        XCTAssertEqual(try central.waitForEvent("read", timeout: 30) { $0.string("uuid") == long }.bytes("value"), (0..<512).map { UInt8($0 % 256) })
        XCTAssertEqual(try central.waitForEvent("read") { $0.string("uuid") == rw }.bytes("value"), Array("hello".utf8))
        XCTAssertEqual(try central.waitForEvent("read_error") { $0.string("uuid") == PeripheralInteropTests.writeOnly }.int("error"), 0x02)
        try central.waitForEvent("wrote") { $0.string("uuid") == rw && $0.int("length") == 300 }
        for _ in 0..<3 {
            try central.waitForEvent("notification", timeout: 20)
            try central.waitForEvent("indication", timeout: 20)
        }
        try central.waitForEvent("done", timeout: 30)
        XCTAssertEqual(try peripheral.waitFor("write") { ($0["hex"] as? String)?.count == 600 }["hex"] as? String, written)
        try peripheral.waitFor("confirmed")
        try peripheral.waitFor("disconnected")
    }
}
