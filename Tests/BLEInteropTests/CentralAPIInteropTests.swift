import BLE
import BLETestSupport
import BLEHCI
import BLEHost
import BLEWire
import Foundation
import XCTest

/// The `Central`/`Peripheral` API against Bumble peripherals over rootcanal: error paths, several
/// links at once, and the GATT procedures the command-line tool does not reach.
final class CentralAPIInteropTests: XCTestCase {
    static let long = BluetoothUUID(string: "7e1f0002-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let rw = BluetoothUUID(string: "7e1f0003-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let wnr = BluetoothUUID(string: "7e1f0006-8d0b-4c1e-9a00-5b1e00c0ffee")

    func address(_ peer: PeerProcess) throws -> DeviceAddress {
        try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random"))
    }

    func characteristic(_ uuid: BluetoothUUID?, on p: Peripheral) async throws -> GATTCharacteristic {
        let target = try XCTUnwrap(uuid)
        for service in try await p.discoverServices() {
            if let c = try await p.discoverCharacteristics(for: service).first(where: { $0.uuid == target }) { return c }
        }
        throw BLEError.invalidArgument("no \(target)")
    }

    /// A peer that drops the link during discovery: the procedure fails with the disconnect
    /// reason well within its timeout, and the link reports it.
    func testPeerDisconnectingDuringDiscoveryGivesATypedError() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("drop_during_discovery.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        defer { Task { await central.close() } }
        let p = try await central.connect(try address(peer), timeout: .seconds(10))
        // The ATT transaction timeout would end it with `.timeout`: `.disconnected` says the
        // host noticed the link going, without measuring real time.
        do {
            _ = try await p.discoverServices()
            XCTFail("discovery should fail")
        } catch let BLEError.disconnected(reason) {
            XCTAssertEqual(reason, .remoteUserTerminatedConnection)
        }
        XCTAssertEqual(p.disconnectReason, .remoteUserTerminatedConnection)
        do {
            _ = try await p.discoverServices()
            XCTFail("a closed link refuses new work")
        } catch BLEError.notConnected {}
        await central.close()
    }

    /// Nobody advertises at this address: the attempt fails at its timeout, cancelled on the radio.
    func testConnectingToAnAbsentAddressFailsAtItsTimeout() async throws {
        let env = try InteropEnvironment.current()
        // The host's time is a manual clock: the attempt can only end at its timeout when the
        // test moves the clock there, once the host has armed that timer.
        let clock = ManualClock()
        let central = try await Central.open(spec: env.rootcanal, clock: clock)
        let absent = DeviceAddress(BDAddress(rawValue: 0xC7_00_00_00_00_00 | UInt64(getpid() & 0xFFFF)), type: .random)
        for (timeout, label) in [(Duration.seconds(2), "first"), (.milliseconds(500), "second")] {
            let attempt = Task { try await central.connect(absent, timeout: timeout) }
            let deadline = clock.now() + timeout
            guard await clock.waitForSleepers(within: .seconds(20), { $0.min() == deadline }) else {
                XCTFail("the \(label) attempt's \(timeout) timer was not armed within 20 s")
                attempt.cancel()
                return
            }
            clock.advance(by: timeout)
            do {
                _ = try await attempt.value
                XCTFail("nothing should answer")
            } catch BLEError.timeout {}
            // The initiator was cancelled: the second attempt is not refused as busy.
        }
        await central.close()
    }

    func testTwoConnectionsAtOnce() async throws {
        let env = try InteropEnvironment.current()
        let first = try startPeer("peripheral.py", environment: env)
        let second = try startPeer("peripheral.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let a = try await central.connect(try address(first), timeout: .seconds(10))
        let b = try await central.connect(try address(second), timeout: .seconds(10))
        let rwA = try await characteristic(Self.rw, on: a)
        let rwB = try await characteristic(Self.rw, on: b)
        try await a.writeValue(Array("to a".utf8), for: rwA)
        try await b.writeValue(Array("to b".utf8), for: rwB)
        let valueA = try await a.readValue(for: rwA)
        let valueB = try await b.readValue(for: rwB)
        XCTAssertEqual(valueA, Array("to a".utf8))
        XCTAssertEqual(valueB, Array("to b".utf8))
        try await a.disconnect()
        XCTAssertEqual(b.state, .connected, "closing one link leaves the other")
        let again = try await b.readValue(for: rwB)
        XCTAssertEqual(again, Array("to b".utf8))
        try await b.disconnect()
        await central.close()
    }

    func testReadProceduresAndATTErrors() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try address(peer), timeout: .seconds(10))
        // A small MTU makes the 512-byte value take Read Blob requests.
        let mtu = try await p.exchangeMTU(64)
        XCTAssertEqual(mtu, 64)
        XCTAssertEqual(p.maximumWriteValueLength(for: .withoutResponse), mtu - 3)

        let battery = try await p.readValues(ofType: BluetoothUUID(0x2A19))
        XCTAssertEqual(battery.map(\.value), [[0x55]], "Read Using Characteristic UUID")
        let location = try await p.readValues(ofType: BluetoothUUID(0x2A38))
        let both = try await p.readMultiple(handles: [battery[0].handle, location[0].handle])
        XCTAssertEqual(both, [0x55, 0x01], "Read Multiple concatenates the values")

        let long = try await characteristic(Self.long, on: p)
        let short = try await p.readShortValue(handle: long.valueHandle)
        XCTAssertEqual(short.count, mtu - 1, "one Read Request returns ATT_MTU - 1 bytes")
        let whole = try await p.readValue(for: long)
        XCTAssertEqual(whole.count, 512)

        let wnr = try await characteristic(Self.wnr, on: p)
        do {
            _ = try await p.readValue(for: wnr)
            XCTFail("reading a write-only characteristic must fail")
        } catch let BLEError.gatt(.att(code, handle, _)) {
            XCTAssertEqual(code, .readNotPermitted)
            XCTAssertEqual(handle, wnr.valueHandle)
        }
        do {
            try await p.writeValue([UInt8](repeating: 1, count: 513), for: try await characteristic(Self.rw, on: p))
            XCTFail("over 512 bytes must be refused locally")
        } catch BLEError.invalidArgument {}
        XCTAssertEqual(p.state, .connected, "errors leave the link up")
        try await p.disconnect()
        await central.close()
    }

    func testReliableWriteAcrossTwoCharacteristics() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let p = try await central.connect(try address(peer), timeout: .seconds(10))
        let rw = try await characteristic(Self.rw, on: p)
        let wnr = try await characteristic(Self.wnr, on: p)
        try await p.reliableWrite([(handle: rw.valueHandle, value: Array("reliable".utf8)), (handle: wnr.valueHandle, value: [9, 8, 7])])
        try peer.waitForEvent("write", timeout: 10) { $0.string("uuid") == Self.rw?.description && $0.string("value") == Array("reliable".utf8).map { String(format: "%02x", $0) }.joined() }
        try peer.waitForEvent("write", timeout: 10) { $0.string("uuid") == Self.wnr?.description && $0.string("value") == "090807" }
        let readBack = try await p.readValue(for: rw)
        XCTAssertEqual(readBack, Array("reliable".utf8))
        try await p.disconnect()
        await central.close()
    }

    /// Cancelling the task that waits for notifications ends the stream; cancelling a scan stops it.
    func testNotificationStreamAndScanCancellation() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let central = try await Central.open(spec: env.rootcanal)
        let found = try await central.find(filter: ScanFilter(nameContains: "BumblePeer"), timeout: .seconds(10))
        XCTAssertEqual(found.address.type, .random)
        let p = try await central.connect(try address(peer), timeout: .seconds(10))
        let notify = try await characteristic(BluetoothUUID(string: "7e1f0004-8d0b-4c1e-9a00-5b1e00c0ffee"), on: p)
        let values = await p.notifications(for: notify)
        try await p.setNotifyValue(true, for: notify)
        var received: [[UInt8]] = []
        for await v in values {
            received.append(v)
            if received.count == 3 { break }
        }
        XCTAssertEqual(received, [[1, 0, 0, 0], [2, 0, 0, 0], [3, 0, 0, 0]])
        try await p.setNotifyValue(false, for: notify)
        try peer.waitForEvent("subscription", timeout: 10) { $0.bool("notify") == false }
        try await p.disconnect()
        await central.close()
    }
}
