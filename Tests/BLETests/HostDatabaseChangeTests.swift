@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest
import BLETestSupport

/// The GATT client across a change of the server's database, end to end through the host over a
/// fake controller that plays the server PDU by PDU: a Service Changed indication (Core Vol 3
/// Part G §7.1) that arrives while a read or write is outstanding, or a Database Out Of Sync
/// answer (§2.5.2.1), has the characteristic found again (by UUID within its service) and the
/// request sent once more; a discovery the indication interrupts covers the changed range again.
///
/// The server's layout: GAP 0x0001–0x0005, GATT 0x0006–0x000D (Service Changed declared at
/// 0x0007, value 0x0008, CCCD 0x0009), and service FFF0 at 0x0010–0x0014 with FFF1 (declaration
/// 0x0011, value 0x0012) and FFF2 (0x0013, 0x0014). The change moves FFF0 to 0x0030–0x0034.
final class HostDatabaseChangeTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_02), type: .random)
    let link: UInt16 = 0x0040

    /// The host, its fake controller, and how many ATT PDUs of the host the test has checked.
    final class Session {
        let t: HostUnderTest
        let central: Central
        let p: Peripheral
        let link: UInt16
        private var checked = 0

        init(t: HostUnderTest, central: Central, p: Peripheral, link: UInt16) {
            self.t = t
            self.central = central
            self.p = p
            self.link = link
        }

        /// Checks the host's next ATT PDU (bounded wait: a PDU that never comes fails the test).
        func client(_ hex: String, file: StaticString = #filePath, line: UInt = #line) async {
            let n = checked
            checked += 1
            let t = self.t
            let payloads: [[UInt8]]
            do {
                payloads = try await t.controller.waitForL2CAP(channel: 0x0004) { $0.count > n }
            } catch {
                return XCTFail("ATT PDU \(n) (\(hex)): \(error)", file: file, line: line)
            }
            let got = payloads[n]
            XCTAssertEqual(got.hexString, hexBytes(hex, file: file, line: line).hexString, "ATT PDU \(n)", file: file, line: line)
        }

        /// The server sends an ATT PDU.
        func server(_ hex: String, file: StaticString = #filePath, line: UInt = #line) async {
            await t.controller.sendL2CAP(handle: link, channel: 4, payload: hexBytes(hex, file: file, line: line))
        }

        /// Both in turn: the client's request, then the server's answer.
        func exchange(_ request: String, _ answer: String, file: StaticString = #filePath, line: UInt = #line) async {
            await client(request, file: file, line: line)
            await server(answer, file: file, line: line)
        }
    }

    static let serviceUUID = BluetoothUUID(0xFFF0)
    static let characteristicUUID = BluetoothUUID(0xFFF1)

    /// Connects, learns the Service Changed characteristic (the stack subscribes to it), discovers
    /// the services and FFF0's characteristics; returns the session and FFF1.
    func connectedWithFFF1() async throws -> (Session, GATTCharacteristic) {
        let s = try await connected()
        try await learnServiceChanged(s)
        let p = s.p
        let services = Task { try await p.discoverServices() }
        await s.exchange("10 0100 ffff 0028", "11 06 0100 0500 0018 0600 0d00 0118 1000 1400 f0ff")
        await s.exchange("10 1500 ffff 0028", "01 10 1500 0a")
        let found = try await services.value
        let service = try XCTUnwrap(found.first { $0.uuid == Self.serviceUUID })
        let characteristics = Task { try await p.discoverCharacteristics(for: service) }
        await s.exchange("08 1000 1400 0328", "09 07 1100 0a 1200 f1ff 1300 02 1400 f2ff")
        await s.exchange("08 1400 1400 0328", "01 08 1400 0a")
        let all = try await characteristics.value
        let c = try XCTUnwrap(all.first { $0.uuid == Self.characteristicUUID })
        XCTAssertEqual(c.valueHandle, 0x0012)
        return (s, c)
    }

    /// Two instances of FFF0, A 0x0010–0x0014 and B 0x0020–0x0024, each with FFF1; A changed
    /// since they were discovered, so `services` lists only B of them. Returns B's FFF1.
    func connectedWithFFF1InTheSecondOfTwoInstances() async throws -> (Session, GATTCharacteristic) {
        let s = try await connected()
        try await learnServiceChanged(s)
        let p = s.p
        let services = Task { try await p.discoverServices() }
        await s.exchange("10 0100 ffff 0028", "11 06 0100 0500 0018 0600 0d00 0118 1000 1400 f0ff")
        await s.exchange("10 1500 ffff 0028", "11 06 2000 2400 f0ff")
        await s.exchange("10 2500 ffff 0028", "01 10 2500 0a")
        let found = try await services.value
        let b = try XCTUnwrap(found.last)
        XCTAssertEqual(b.startHandle, 0x0020)
        let characteristics = Task { try await p.discoverCharacteristics(for: b) }
        await s.exchange("08 2000 2400 0328", "09 07 2100 0a 2200 f1ff 2300 02 2400 f2ff")
        await s.exchange("08 2400 2400 0328", "01 08 2400 0a")
        let inB = try await characteristics.value
        let c = try XCTUnwrap(inB.first { $0.uuid == Self.characteristicUUID })
        XCTAssertEqual(c.valueHandle, 0x0022)
        await s.server("1d 0800 1000 1400")
        await s.client("1e")
        XCTAssertEqual(p.services.map(\.startHandle), [0x0001, 0x0006, 0x0020])
        return (s, c)
    }

    /// FFF1 found through the attribute cache with no service discovered (as `ble read UUID`
    /// finds it), and a read of it answered only after a Service Changed indication for
    /// 0x0010–0x0034 (confirmed): the session and the read, whose retry is the test's.
    func readOfFFF1FoundThroughTheCacheAcrossAChange() async throws -> (Session, Task<[UInt8], any Error>) {
        let s = try await connected()
        try await learnServiceChanged(s)
        let p = s.p
        let uuid = Self.characteristicUUID
        let lookup = Task { try await p.characteristic(uuid) }
        await s.exchange("08 0100 ffff 0328", "09 07 0700 20 0800 052a 1100 0a 1200 f1ff 1300 02 1400 f2ff")
        let located = try await lookup.value
        let c = try XCTUnwrap(located)
        let read = Task { try await p.readValue(for: c) }
        await s.client("0a 1200")
        await s.server("1d 0800 1000 3400")
        await s.client("1e")
        await s.server("0b 01")
        return (s, read)
    }

    func connected() async throws -> Session {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let p = try await central.connect(peer, timeout: .seconds(5))
        return Session(t: t, central: central, p: p, link: link)
    }

    /// Discovers the GATT service's characteristics: the stack learns Service Changed's value
    /// handle (0x0008) and enables its indications (CCCD 0x0009).
    func learnServiceChanged(_ s: Session) async throws {
        let gatt = GATTService(uuid: GATTUUID.genericAttributeService, handleRange: 0x0006...0x000D)
        let p = s.p
        let discovery = Task { try await p.discoverCharacteristics(for: gatt) }
        await s.exchange("08 0600 0d00 0328", "09 07 0700 20 0800 052a")
        await s.exchange("08 0800 0d00 0328", "01 08 0800 0a")
        await s.exchange("04 0900 0d00", "05 01 0900 0229")
        await s.exchange("04 0a00 0d00", "01 04 0a00 0a")
        await s.exchange("12 0900 0200", "13")
        _ = try await discovery.value
    }

    /// What the client asks to find FFF1 again after FFF0 moved to 0x0030–0x0034: FFF0 by UUID,
    /// then its characteristics.
    func rediscoverMovedFFF1(_ s: Session) async {
        await s.exchange("06 0100 ffff 0028 f0ff", "07 3000 3400")
        await s.exchange("06 3500 ffff 0028 f0ff", "01 06 3500 0a")
        await s.exchange("08 3000 3400 0328", "09 07 3100 0a 3200 f1ff 3300 02 3400 f2ff")
        await s.exchange("08 3400 3400 0328", "01 08 3400 0a")
    }

    // MARK: Reads and writes outstanding when the database changes

    func testAReadAnsweredAfterServiceChangedIsReadAgainWhereTheCharacteristicMoved() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        let read = Task { try await p.readValueAndCharacteristic(for: c) }
        await s.client("0a 1200")
        // FFF0 moved: the old handles name nothing (or something else) now.
        await s.server("1d 0800 1000 3400")
        await s.client("1e")
        await s.server("0b 5354414c45") // "STALE", which must not be returned
        await rediscoverMovedFFF1(s)
        await s.exchange("0a 3200", "0b 4652455348")
        let (value, from) = try await read.value
        XCTAssertEqual(value, Array("FRESH".utf8))
        XCTAssertEqual(from.valueHandle, 0x0032, "the characteristic read from is where it moved")
        await s.central.close()
    }

    func testAWriteAnsweredAfterServiceChangedIsSentOnceMoreToTheMovedCharacteristic() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        let write = Task { try await p.writeValue([0xAA], for: c) }
        await s.client("12 1200 aa")
        await s.server("1d 0800 1000 3400")
        await s.client("1e")
        await s.server("13")
        await rediscoverMovedFFF1(s)
        await s.exchange("12 3200 aa", "13")
        let written = try await write.value
        XCTAssertEqual(written.valueHandle, 0x0032, "the characteristic written is where it moved")
        await s.central.close()
    }

    /// Once: a second change under the retry ends the read with the typed error, and nothing
    /// more is sent for it.
    func testASecondChangeUnderTheRetryEndsWithDatabaseChanged() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        let read = Task { try await p.readValue(for: c) }
        await s.client("0a 1200")
        await s.server("1d 0800 1000 3400")
        await s.client("1e")
        await s.server("0b 01")
        await rediscoverMovedFFF1(s)
        await s.client("0a 3200")
        await s.server("1d 0800 3000 3400")
        await s.client("1e")
        await s.server("0b 02")
        do {
            let value = try await read.value
            XCTFail("expected the change to be reported, got \(value)")
        } catch let BLEError.gatt(error) {
            XCTAssertEqual(error, .databaseChanged(0x0030...0x0034))
            XCTAssertEqual("\(BLEError.gatt(error))",
                           "GATT: the server's database changed (handles 0x0030...0x0034) during the request; no answer to it was used")
        }
        let again = Task { try await p.readShortValue(handle: 0x0005) }
        await s.exchange("0a 0500", "0b 00")
        _ = try await again.value
        await s.central.close()
    }

    /// A characteristic found through the attribute cache, with no service discovered (as
    /// `ble read UUID` finds it), is found the same way again: the cache lost the changed range,
    /// so only that is searched.
    func testACharacteristicFoundThroughTheCacheIsFoundThroughItAgain() async throws {
        let (s, read) = try await readOfFFF1FoundThroughTheCacheAcrossAChange()
        // The Service Changed declaration's end reached 0x0010, so it went with the range.
        await s.exchange("08 0700 ffff 0328", "09 07 0700 20 0800 052a 3100 0a 3200 f1ff 3300 02 3400 f2ff")
        // No other FFF1 after it, to the end of the database.
        await s.exchange("08 3300 ffff 0328", "09 07 3300 02 3400 f2ff")
        await s.exchange("08 3400 ffff 0328", "01 08 3400 0a")
        await s.exchange("0a 3200", "0b 02")
        let value = try await read.value
        XCTAssertEqual(value, [0x02])
        await s.central.close()
    }

    /// Found through the cache, but the database now holds two of its UUID: which one it was
    /// cannot be told, so nothing is read again.
    func testACharacteristicFoundThroughTheCacheIsNotReadAgainWhenItsUUIDIsNoLongerUnique() async throws {
        let (s, read) = try await readOfFFF1FoundThroughTheCacheAcrossAChange()
        await s.exchange("08 0700 ffff 0328", "09 07 0700 20 0800 052a 3100 0a 3200 f1ff 3300 02 3400 f1ff")
        await s.exchange("08 3300 ffff 0328", "09 07 3300 02 3400 f1ff")
        await s.exchange("08 3400 ffff 0328", "01 08 3400 0a")
        await assertEndsWithDatabaseChanged(read, 0x0010...0x0034)
        await assertNextRequestIsTheTestsOwn(s)
    }

    /// Two instances of FFF0: A 0x0010–0x0014 and B 0x0020–0x0024, each with FFF1. A changed
    /// before the write (so `services` lists only B of them); then B's characteristics change
    /// under a write to B's FFF1. B's declaration at 0x0020 is outside the change and keeps its
    /// handle (§7.1): the write goes once more to the FFF1 of the FFF0 starting there.
    func testTheRetryWritesTheInstanceOfTheServiceStillStartingAtItsHandle() async throws {
        let (s, c) = try await connectedWithFFF1InTheSecondOfTwoInstances()
        let p = s.p
        let write = Task { try await p.writeValue([0xAA], for: c) }
        await s.client("12 2200 aa")
        await s.server("1d 0800 2100 2400")
        await s.client("1e")
        await s.server("13")
        await s.exchange("06 0100 ffff 0028 f0ff", "07 1000 1400 2000 2400")
        await s.exchange("06 2500 ffff 0028 f0ff", "01 06 2500 0a")
        await s.exchange("08 2000 2400 0328", "09 07 2100 0a 2200 f1ff 2300 02 2400 f2ff")
        await s.exchange("08 2400 2400 0328", "01 08 2400 0a")
        await s.exchange("12 2200 aa", "13")
        let written = await result(within: .seconds(10)) { (try? await write.value) != nil }
        XCTAssertEqual(written, true)
        await s.central.close()
    }

    /// As above, but B is replaced (0x0020–0x0024) while the client looks for it again: B's
    /// declaration is now inside a change and FFF0 has two instances, so which one is B cannot
    /// be told, and the write ends with `.databaseChanged` without going anywhere.
    func testAChangeWhileTheCharacteristicIsFoundAgainCountsForTheRetry() async throws {
        let (s, c) = try await connectedWithFFF1InTheSecondOfTwoInstances()
        let p = s.p
        let write = Task { try await p.writeValue([0xAA], for: c) }
        await s.client("12 2200 aa")
        await s.server("1d 0800 2100 2400")
        await s.client("1e")
        await s.server("13")
        await s.client("06 0100 ffff 0028 f0ff")
        await s.server("1d 0800 2000 2400")
        await s.client("1e")
        await s.server("07 1000 1400 2000 2400")
        await s.exchange("06 0100 ffff 0028 f0ff", "07 1000 1400 2000 2400")
        await s.exchange("06 2500 ffff 0028 f0ff", "01 06 2500 0a")
        await s.exchange("08 2000 2400 0328", "09 07 2100 0a 2200 f1ff 2300 02 2400 f2ff")
        await s.exchange("08 2400 2400 0328", "01 08 2400 0a")
        // Found again with the second change counted.
        await s.exchange("06 0100 ffff 0028 f0ff", "07 1000 1400 2000 2400")
        await s.exchange("06 2500 ffff 0028 f0ff", "01 06 2500 0a")
        await assertEndsWithDatabaseChanged(write, 0x0021...0x0024)
        await assertNextRequestIsTheTestsOwn(s)
    }

    /// A characteristic of a secondary service FFF5 (0x0020–0x0024, reached through an include,
    /// as CBPeripheral.discoverIncludedServices hands it on), while primary FFF0 at 0x0010 has an
    /// FFF1 too. The change reaches into FFF5, whose end a secondary service's declaration does
    /// not say: the write ends with `.databaseChanged` and goes nowhere else.
    func testTheRetryOfASecondaryServicesCharacteristicNeverGoesToAnotherService() async throws {
        let s = try await connected()
        try await learnServiceChanged(s)
        let p = s.p
        let secondary = GATTService(uuid: BluetoothUUID(0xFFF5), isPrimary: false, handleRange: 0x0020...0x0024)
        let characteristics = Task { try await p.discoverCharacteristics(for: secondary) }
        await s.exchange("08 2000 2400 0328", "09 07 2100 0a 2200 f1ff 2300 02 2400 f2ff")
        await s.exchange("08 2400 2400 0328", "01 08 2400 0a")
        let inSecondary = try await characteristics.value
        let c = try XCTUnwrap(inSecondary.first { $0.uuid == Self.characteristicUUID })
        let write = Task { try await p.writeValue([0xAA], for: c) }
        await s.client("12 2200 aa")
        await s.server("1d 0800 2100 2400")
        await s.client("1e")
        await s.server("13")
        await assertEndsWithDatabaseChanged(write, 0x0021...0x0024)
        await assertNextRequestIsTheTestsOwn(s)
    }

    /// `task` ends, within a bound, with `BLEError.gatt(.databaseChanged(range))`.
    func assertEndsWithDatabaseChanged<T: Sendable>(_ task: Task<T, any Error>, _ range: ClosedRange<UInt16>,
                                                     file: StaticString = #filePath, line: UInt = #line) async {
        let ended = await result(within: .seconds(10)) { () -> String in
            do {
                return "returned \(try await task.value)"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(ended, "\(BLEError.gatt(.databaseChanged(range)))", file: file, line: line)
    }

    /// The client's next ATT request is the one the test makes now: nothing was sent before it.
    func assertNextRequestIsTheTestsOwn(_ s: Session, file: StaticString = #filePath, line: UInt = #line) async {
        let p = s.p
        let again = Task { try await p.readShortValue(handle: 0x0005) }
        await s.exchange("0a 0500", "0b 00", file: file, line: line)
        _ = await result(within: .seconds(10)) { try? await again.value }
        await s.central.close()
    }

    /// A characteristic whose service a change covered before the request started was neither
    /// found through the cache nor is in a service the client knows: it is not looked for by
    /// UUID across the database, where the first of its UUID may be another.
    func testACharacteristicOfAServiceChangedBeforeTheRequestIsNotLookedForByUUID() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        await s.server("1d 0800 1000 1400")
        await s.client("1e")
        XCTAssertEqual(p.services.map(\.startHandle), [0x0001, 0x0006])
        let read = Task { try await p.readValue(for: c) }
        await s.client("0a 1200")
        await s.server("1d 0800 1000 1400")
        await s.client("1e")
        await s.server("0b 01")
        await assertEndsWithDatabaseChanged(read, 0x0010...0x0014)
        await assertNextRequestIsTheTestsOwn(s)
    }

    /// A change elsewhere leaves the answer trusted: no second request.
    func testAServiceChangedRangeThatMissesTheCharacteristicLeavesTheAnswerAsItIs() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        let read = Task { try await p.readValue(for: c) }
        await s.client("0a 1200")
        await s.server("1d 0800 4000 5000")
        await s.client("1e")
        await s.server("0b 01")
        let value = try await read.value
        XCTAssertEqual(value, [0x01])
        // The next request the client makes is the test's own: nothing was sent in between.
        let again = Task { try await p.readShortValue(handle: 0x0014) }
        await s.exchange("0a 1400", "0b 02")
        _ = try await again.value
        await s.central.close()
    }

    /// Database Out Of Sync (§2.5.2.1): the server did not serve the request; the client reads
    /// the Database Hash (which makes it change-aware), finds the characteristic again and asks
    /// once more.
    func testDatabaseOutOfSyncTakesTheSamePathAsServiceChanged() async throws {
        let (s, c) = try await connectedWithFFF1()
        let p = s.p
        let read = Task { try await p.readValue(for: c) }
        await s.exchange("0a 1200", "01 0a 1200 12")
        await s.exchange("08 0100 ffff 2a2b", "09 12 0c00 00112233445566778899aabbccddeeff")
        await rediscoverMovedFFF1(s)
        await s.exchange("0a 3200", "0b 03")
        let value = try await read.value
        XCTAssertEqual(value, [0x03])
        await s.central.close()
    }

    // MARK: Discovery interrupted by Service Changed

    func testAServiceAddedWhileServicesAreDiscoveredIsInTheResult() async throws {
        let s = try await connected()
        try await learnServiceChanged(s)
        let p = s.p
        let discovery = Task { try await p.discoverServices() }
        await s.exchange("10 0100 ffff 0028", "11 06 0100 0500 0018 0600 0d00 0118")
        await s.client("10 0e00 ffff 0028")
        // FFF0 is added at 0x0020–0x002F while the request is outstanding; the answer may be
        // from before the change, so the range is asked again.
        await s.server("1d 0800 2000 2f00")
        await s.client("1e")
        await s.server("01 10 0e00 0a")
        await s.exchange("10 0e00 ffff 0028", "11 06 2000 2f00 f0ff")
        await s.exchange("10 3000 ffff 0028", "01 10 3000 0a")
        let services = try await discovery.value
        XCTAssertEqual(services.map(\.uuid), [GATTUUID.genericAccessService, GATTUUID.genericAttributeService, Self.serviceUUID])
        XCTAssertEqual(s.p.services.map(\.uuid), services.map(\.uuid))
        await s.central.close()
    }
}
