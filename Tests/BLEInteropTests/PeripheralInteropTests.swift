import BLE
import BLEHost
import BLEWire
import Foundation
import XCTest

/// `ble serve` against Bumble centrals over rootcanal, and against our own `Central`.
final class PeripheralInteropTests: XCTestCase {
    static func uuid(_ n: Int) -> String { String(format: "8f3c%04x-6c5a-4d2e-9b1f-2f0a1c3b4d5e", n) }
    static let service = uuid(1)
    static let long = uuid(2)
    static let rw = uuid(3)
    static let readOnly = uuid(4)
    static let writeOnly = uuid(5)
    static let notify = uuid(6)
    static let indicate = uuid(7)
    static let encrypted = uuid(8)
    static let described = uuid(9)
    static let authenticated = uuid(10)
    static let signed = uuid(11)

    func serve(_ env: InteropEnvironment, profile: String = "test", name: String = "SwiftPeer") throws -> ServeProcess {
        let process = try ServeProcess(profile: profile, name: name, environment: env)
        addTeardownBlock { process.stop() }
        return process
    }

    func consecutive(_ values: [String]) -> Bool {
        let numbers = values.compactMap { hex -> UInt32? in
            guard let bytes = [UInt8](hexString: hex), bytes.count == 4 else { return nil }
            return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        }
        guard numbers.count == values.count, let first = numbers.first else { return false }
        return numbers == Array(first..<(first + UInt32(numbers.count)))
    }

    func testBumbleCentralDiscoversReadsWritesLongAndSubscribes() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        let long = String(repeating: "c3", count: 300)
        let central = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description,
            "--read", Self.long, "--read", Self.rw, "--read", Self.writeOnly, "--read", Self.encrypted,
            "--write", "\(Self.rw)=\(long)",
            "--subscribe", Self.notify, "--subscribe", Self.indicate, "--count", "4",
        ], environment: env)
        let discovered = try central.waitForEvent("discovered", timeout: 30)
        XCTAssertEqual(discovered.int("services"), 3, "GAP, GATT and the test service")
        let services = central.events.filter { $0.name == "service" }.compactMap { $0.string("uuid") }
        XCTAssertEqual(services, ["1800", "1801", Self.service])
        let characteristics = central.events.filter { $0.name == "characteristic" && $0.string("service") == Self.service }.compactMap { $0.string("uuid") }
        XCTAssertEqual(characteristics, [Self.long, Self.rw, Self.readOnly, Self.writeOnly, Self.notify, Self.indicate, Self.encrypted, Self.described, Self.authenticated, Self.signed])

        let readLong = try central.waitForEvent("read", timeout: 30) { $0.string("uuid") == Self.long }
        XCTAssertEqual(readLong.bytes("value"), (0..<512).map { UInt8($0 % 256) })
        let readRW = try central.waitForEvent("read") { $0.string("uuid") == Self.rw }
        XCTAssertEqual(readRW.bytes("value"), Array("hello".utf8))
        let writeOnly = try central.waitForEvent("read_error") { $0.string("uuid") == Self.writeOnly }
        XCTAssertEqual(writeOnly.int("error"), 0x02, "Read Not Permitted")
        let encrypted = try central.waitForEvent("read_error") { $0.string("uuid") == Self.encrypted }
        XCTAssertTrue([0x05, 0x0F].contains(encrypted.int("error") ?? 0), "Insufficient Authentication or Encryption, got \(String(describing: encrypted.int("error")))")
        try central.waitForEvent("wrote") { $0.string("uuid") == Self.rw && $0.int("length") == 300 }

        var notified: [String] = []
        var indicated: [String] = []
        for _ in 0..<4 {
            notified.append(try central.waitForEvent("notification", timeout: 20).string("value") ?? "")
            indicated.append(try central.waitForEvent("indication", timeout: 20).string("value") ?? "")
        }
        XCTAssertTrue(consecutive(notified), "notifications in order without gaps: \(notified)")
        XCTAssertTrue(consecutive(indicated), "indications in order without gaps: \(indicated)")
        try central.waitForEvent("done", timeout: 30)

        try peripheral.waitFor("connected")
        try peripheral.waitFor("mtu") { $0["mtu"] as? Int == 247 }
        let write = try peripheral.waitFor("write") { ($0["hex"] as? String)?.count == 600 }
        XCTAssertEqual(write["hex"] as? String, long)
        try peripheral.waitFor("subscription") { $0["notifications"] as? Bool == true }
        try peripheral.waitFor("subscription") { $0["indications"] as? Bool == true }
        try peripheral.waitFor("confirmed")
        try peripheral.waitFor("disconnected")
    }

    func testWritesOverTheLimitAndToReadOnlyValuesAreRefused() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        let tooLong = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description, "--write", "\(Self.rw)=" + String(repeating: "00", count: 600),
        ], environment: env)
        let failed = try tooLong.waitForEvent("error", timeout: 30)
        XCTAssertTrue((failed.string("message") ?? "").contains("INVALID_ATTRIBUTE_LENGTH") || (failed.string("message") ?? "").contains("0x0d") || (failed.string("message") ?? "").contains("13"),
                      "600 bytes are refused with Invalid Attribute Value Length: \(failed.string("message") ?? "")")
        _ = tooLong.waitForExit(timeout: 10)
        let readOnly = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description, "--write", "\(Self.long)=0102",
        ], environment: env)
        let refused = try readOnly.waitForEvent("error", timeout: 30)
        XCTAssertTrue((refused.string("message") ?? "").contains("WRITE_NOT_PERMITTED"), refused.string("message") ?? "")
    }

    /// After a central disconnects, the profile advertises again and accepts the next one.
    func testAdvertisesAgainAfterADisconnect() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env, profile: "heart-rate")
        for round in 1...2 {
            let central = try startPeer("central.py", arguments: [
                "--target", peripheral.address.description, "--read", "2A38", "--subscribe", "2A37", "--count", "2",
            ], environment: env)
            let location = try central.waitForEvent("read", timeout: 30) { $0.string("uuid") == "2A38" }
            XCTAssertEqual(location.bytes("value"), [0x01], "Body Sensor Location: Chest (round \(round))")
            try central.waitForEvent("notification", timeout: 20)
            try central.waitForEvent("done", timeout: 30)
            try peripheral.waitFor("disconnected", timeout: 20)
        }
        XCTAssertEqual(peripheral.events.filter { $0["event"] as? String == "connected" }.count, 2)
    }

    func testBumbleGattDumpReadsTheWholeDatabase() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        let dump = env.python.deletingLastPathComponent().appendingPathComponent("bumble-gatt-dump")
        guard FileManager.default.isExecutableFile(atPath: dump.path) else { throw XCTSkip("bumble-gatt-dump is not in the venv") }
        let result = try ProcessRunner.run(dump, arguments: [env.bumbleTransport, peripheral.address.description], timeout: 90)
        let text = (result.stdout + result.stderr).lowercased()
        XCTAssertTrue(text.contains(Self.service), "the custom service is dumped: \(text.suffix(3000))")
        for uuid in [Self.long, Self.rw, Self.notify, Self.indicate, Self.described] {
            XCTAssertTrue(text.contains(uuid), "\(uuid) is dumped")
        }
        XCTAssertTrue(text.contains(Array("described characteristic".utf8).hexString), "the user description is read (printed as hex)")
        XCTAssertTrue(text.contains((0..<512).map { String(format: "%02x", $0 % 256) }.joined()), "the 512-byte value is read whole")
    }

    /// Four Bumble centrals connected at once each receive their own notifications, with
    /// nothing lost and nothing reordered.
    func testFourCentralsAtOnceEachReceiveTheirNotifications() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        var centrals: [PeerProcess] = []
        for _ in 0..<4 {
            centrals.append(try startPeer("central.py", arguments: [
                "--target", peripheral.address.description, "--subscribe", Self.notify, "--count", "10", "--timeout", "90",
            ], environment: env))
        }
        for central in centrals {
            var values: [String] = []
            for _ in 0..<10 {
                values.append(try central.waitForEvent("notification", timeout: 60).string("value") ?? "")
            }
            XCTAssertTrue(consecutive(values), "\(central.address): \(values)")
            try central.waitForEvent("done", timeout: 30)
        }
        XCTAssertEqual(Set(peripheral.events.filter { $0["event"] as? String == "connected" }.compactMap { $0["central"] as? String }).count, 4)
    }

    /// Our central against our peripheral, both over rootcanal: every error the test profile is
    /// built to give comes back typed.
    func testSwiftCentralAgainstSwiftPeripheral() async throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        let central = try await Central.open(spec: env.rootcanal)
        let address = try XCTUnwrap(DeviceAddress(string: "\(peripheral.address.description)/random"))
        let p = try await central.connect(address, timeout: .seconds(10))
        let services = try await p.discoverServices()
        let service = try XCTUnwrap(services.first { $0.uuid == BluetoothUUID(string: Self.service) })
        let characteristics = try await p.discoverCharacteristics(for: service)
        func c(_ uuid: String) throws -> GATTCharacteristic {
            try XCTUnwrap(characteristics.first { $0.uuid == BluetoothUUID(string: uuid) })
        }
        // ATT_MTU 23: the long read takes Read Blob requests, the long write prepared writes.
        let long = try await p.readValue(for: try c(Self.long))
        XCTAssertEqual(long, (0..<512).map { UInt8($0 % 256) })
        let value = (0..<300).map { UInt8($0 % 7) }
        try await p.writeValue(value, for: try c(Self.rw))
        let readBack = try await p.readValue(for: try c(Self.rw))
        XCTAssertEqual(readBack, value)

        await assertATTError(.writeNotPermitted) { try await p.writeValue([1], for: try c(Self.long)) }
        await assertATTError(.readNotPermitted) { _ = try await p.readValue(for: try c(Self.writeOnly)) }
        // The encrypted value makes the central pair (Just Works) on demand, then reads it; the
        // authenticated one stays refused: Just Works cannot give an authenticated key.
        let secret = try await p.readValue(for: try c(Self.encrypted))
        XCTAssertEqual(String(decoding: secret, as: UTF8.self), "secret")
        let level = await p.securityLevel
        XCTAssertEqual(level, .encrypted)
        await assertATTError(.insufficientAuthentication) { _ = try await p.readValue(for: try c(Self.authenticated)) }
        await assertATTError(.invalidHandle) { _ = try await p.readValue(handle: 0xFFF0) }

        let descriptors = try await p.discoverDescriptors(for: try c(Self.described))
        let description = try XCTUnwrap(descriptors.first { $0.uuid == BluetoothUUID(0x2901) })
        let text = try await p.readValue(for: description)
        XCTAssertEqual(String(decoding: text, as: UTF8.self), "described characteristic")

        let indications = await p.notifications(for: try c(Self.indicate))
        try await p.setNotifyValue(true, for: try c(Self.indicate))
        var received: [[UInt8]] = []
        for await v in indications {
            received.append(v)
            if received.count == 3 { break }
        }
        XCTAssertTrue(consecutive(received.map { $0.hexString }), "\(received)")
        try await p.disconnect()
        await central.close()
    }

    /// `ble serve` ends cleanly on SIGTERM and at `--duration`; `ble scan` ends on SIGINT with 130.
    func testCommandsStopOnSignalsAndDuration() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)

        // The scan is interrupted once it has heard the peripheral: an explicit sign that it is
        // up (its signal handlers installed, the radio scanning), not a guess at how long that takes.
        let scan = try BLEToolProcess(["scan", "--json", "--hci", env.rootcanal])
        addTeardownBlock { scan.stop() }
        try scan.waitForAnyLine(timeout: 30)
        XCTAssertEqual(scan.interrupt(timeout: 10), 130, "Ctrl-C stops an open-ended scan with status 130")

        peripheral.stop()
        // The SIGKILL fallback (after 5 s) would leave status 9: 0 means SIGTERM ended it.
        XCTAssertEqual(peripheral.exitStatus, 0, "SIGTERM ends serve without the SIGKILL fallback")

        // A bound, not a measurement: serve ignoring --duration would be stopped at it and fail.
        let timed = try BLETool.run(["serve", "battery", "--duration", "2", "--hci", env.rootcanal], timeout: 30)
        XCTAssertTrue(timed.succeeded, "\(timed)")
    }

    func assertATTError(_ codes: Set<ATTErrorCode>, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected one of \(codes)", file: file, line: line)
        } catch let BLEError.gatt(.att(code, _, _)) {
            XCTAssertTrue(codes.contains(code), "got \(code), expected one of \(codes)", file: file, line: line)
        } catch {
            XCTFail("expected an ATT error, got \(error)", file: file, line: line)
        }
    }

    func assertATTError(_ code: ATTErrorCode, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void) async {
        await assertATTError([code], file: file, line: line, body)
    }
}
