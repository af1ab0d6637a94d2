import BLE
import BLEVirtual
import XCTest
import BLESystems
import BLETestSupport

/// The renderers of `ble scan`, `ble gatt` and `ble radio` on fixed input: the scan's table rows,
/// live table and JSON lines (and which reports the listing prints), the GATT database tree
/// and JSON, the radio's event lines.
final class ScanAndGATTRendererTests: XCTestCase {
    static let hrm = ScannedDevice(
        address: DeviceAddress(BDAddress(rawValue: 0x00_5A_B1_00_00_03), type: .public),
        advertisement: AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).serviceUUIDs(["180D"]).localName("HRM").build(),
        rssi: -40, isConnectable: true, lastSeen: .seconds(1), firstSeen: .seconds(1), hasScanResponse: false)
    static let beacon = ScannedDevice(
        address: DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_01), type: .random),
        advertisement: AdvertisingData.Builder().manufacturerData(companyID: 0x004C, data: [0x02, 0x15])
            .txPowerLevel(-8).serviceData("FEAA", [0x10, 0x00]).appearance(0x0341).build(),
        rssi: nil, isConnectable: false, lastSeen: .seconds(2), firstSeen: .seconds(2), hasScanResponse: false)

    // MARK: - scan

    func testScanLineColumns() {
        XCTAssertEqual(ScanLines.text(Self.hrm, now: .milliseconds(3_500)),
                       "HRM                  00:5A:B1:00:00:03 pub    -40   2.5s  flags=LE General,BR/EDR Not Supported services=[180D] name=\"HRM\"")
        // No name, a random address, no RSSI: placeholders keep the columns.
        XCTAssertEqual(ScanLines.text(Self.beacon, now: .seconds(2)),
                       "(unnamed)            C1:00:00:00:00:01 rnd    ?     0.0s  " + Self.beacon.advertisement.summary)
        // A name longer than its column is cut, never shifting the rest.
        var long = Self.hrm
        long.advertisement = AdvertisingData.Builder().localName("A very long device name").build()
        XCTAssertTrue(ScanLines.text(long, now: .seconds(1)).hasPrefix("A very long device n 00:5A:B1"))
    }

    /// A bonded device's RPA is shown with the identity its IRK resolves it to; a bonded device
    /// heard at its identity (or resolved by the controller) is marked bonded.
    func testScanLineAndJSONShowABondedDevicesIdentity() {
        var rpa = Self.beacon
        rpa.address = DeviceAddress(BDAddress(rawValue: 0x4A_11_22_33_44_55), type: .random)
        rpa.identity = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AA), type: .public)
        XCTAssertTrue(ScanLines.text(rpa, now: .seconds(2)).hasPrefix("(unnamed)            4A:11:22:33:44:55 rnd = 00:1B:DC:00:00:AA pub ?     0.0s"),
                      ScanLines.text(rpa, now: .seconds(2)))
        XCTAssertTrue(ScanLines.json(rpa).text.hasPrefix(#"{"address":"4A:11:22:33:44:55","addressType":"random","identity":"00:1B:DC:00:00:AA","identityType":"public","name":null"#),
                      ScanLines.json(rpa).text)
        var resolved = Self.hrm
        resolved.identity = resolved.address
        XCTAssertTrue(ScanLines.text(resolved, now: .seconds(1)).hasPrefix("HRM                  00:5A:B1:00:00:03 pub bonded -40"), ScanLines.text(resolved, now: .seconds(1)))
    }

    func testScanJSONHasEveryAdvertisedField() {
        XCTAssertEqual(ScanLines.json(Self.hrm).text,
                       #"{"address":"00:5A:B1:00:00:03","addressType":"public","name":"HRM","rssi":-40,"connectable":true,"serviceUUIDs":["180D"],"manufacturerData":null,"data":"02010603030d18040948524d","extended":false}"#)
        // Manufacturer data is the company ID little-endian then the data, as on the air.
        XCTAssertEqual(ScanLines.json(Self.beacon).text,
                       #"{"address":"C1:00:00:00:00:01","addressType":"random","name":null,"rssi":null,"connectable":false,"serviceUUIDs":[],"manufacturerData":"4c000215","manufacturer":"Apple, Inc.","txPower":-8,"serviceData":{"FEAA":"1000"},"appearance":833,"data":"05ff4c000215020af80516aafe100003194103","extended":false}"#)
    }

    /// An extended advertisement's set, PHYs and periodic interval follow the summary (and are
    /// fields of its JSON), and a truncated one says so; a legacy one's line is as before.
    func testScanLineAndJSONShowAnExtendedAdvertisementsSetAndPHYs() {
        var longRange = Self.hrm
        longRange.extended = ExtendedAdvertisingInfo(advertisingSID: 5, primaryPHY: .leCoded, secondaryPHY: .le2M,
                                                     txPower: -4, periodicAdvertisingInterval: 0x0321)
        XCTAssertEqual(ScanLines.text(longRange, now: .seconds(1)), ScanLines.text(Self.hrm, now: .seconds(1)) + " [SID 5 Coded/2M, periodic 1001.25 ms]")
        XCTAssertTrue(ScanLines.json(longRange).text.hasSuffix(#","manufacturerData":null,"data":"02010603030d18040948524d","extended":true,"sid":5,"primaryPHY":"coded","secondaryPHY":"2M","advertiserTxPower":-4,"periodicInterval":1001.25}"#),
                      ScanLines.json(longRange).text)
        var cut = Self.hrm
        cut.extended = ExtendedAdvertisingInfo(advertisingSID: nil, primaryPHY: .le1M)
        cut.isTruncated = true
        XCTAssertTrue(ScanLines.text(cut, now: .seconds(1)).hasSuffix(#"name="HRM" [1M, truncated]"#), ScanLines.text(cut, now: .seconds(1)))
        var anonymous = Self.hrm
        anonymous.extended = ExtendedAdvertisingInfo(advertisingSID: 2, primaryPHY: .le1M, isAnonymous: true)
        XCTAssertTrue(ScanLines.text(anonymous, now: .seconds(1)).hasSuffix(" [SID 2 1M, anonymous]"), ScanLines.text(anonymous, now: .seconds(1)))
        XCTAssertTrue(ScanLines.json(anonymous).text.hasSuffix(#""advertiserTxPower":null,"anonymous":true}"#), ScanLines.json(anonymous).text)
        XCTAssertTrue(ScanLines.json(cut).text.hasSuffix(#""extended":true,"sid":null,"primaryPHY":"1M","secondaryPHY":null,"advertiserTxPower":null,"truncated":true}"#),
                      ScanLines.json(cut).text)
    }

    func testScanTableIsStrongestFirstAndDropsTheQuiet() {
        var table = ScanTable()
        var tied = Self.hrm // as strong as HRM, at a lower address
        tied.address = DeviceAddress(BDAddress(rawValue: 0x00_5A_B1_00_00_01), type: .public)
        tied.advertisement = AdvertisingData.Builder().localName("EchoServer").build()
        var quiet = Self.beacon // the strongest, but last heard more than 10 s ago
        quiet.address = DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_02), type: .random)
        quiet.lastSeen = .zero
        quiet.rssi = -20
        var stronger = Self.hrm // a fresher report of HRM replaces the first
        stronger.rssi = -30
        for d in [Self.hrm, Self.beacon, quiet, tied] { table.update(d) }
        let now = Duration.milliseconds(10_500)
        XCTAssertEqual(table.render(now: now), [
            "\u{1B}[H\u{1B}[2JNAME                 ADDRESS                  RSSI  AGE   ADVERTISEMENT",
            ScanLines.text(tied, now: now),
            ScanLines.text(Self.hrm, now: now),
            ScanLines.text(Self.beacon, now: now),
            "",
            "3 device(s); Ctrl-C to stop",
            "",
        ].joined(separator: "\n"), "equal RSSIs by address; no RSSI last; the quiet one dropped")
        table.update(stronger)
        XCTAssertEqual(table.render(now: now).split(separator: "\n")[1], Substring(ScanLines.text(stronger, now: now)))
        XCTAssertTrue(table.render(now: .seconds(60)).hasSuffix("\n\n0 device(s); Ctrl-C to stop\n"))
    }

    /// Plain and JSON listings print a device when it is first heard and when its advertisement
    /// changes, never for a repeat of the same one.
    func testScanListingPrintsNewAndChangedAdvertisementsOnly() async throws {
        var renamed = Self.hrm
        renamed.advertisement = AdvertisingData.Builder().localName("HRM 2").build()
        let reports = [Self.hrm, Self.hrm, Self.beacon, renamed, Self.beacon]
        for mode in [OutputMode.plain, .json] {
            let out = Collected<String>()
            try await ScanListing.run(Self.stream(reports), mode: mode, clock: ManualClock(), write: out.append)
            let expected = [Self.hrm, Self.beacon, renamed].map {
                (mode == .json ? ScanLines.json($0).text : ScanLines.text($0, now: .zero)) + "\n"
            }
            XCTAssertEqual(out.all, expected, "\(mode)")
        }
    }

    /// Live, the table is redrawn on the clock; when the scan ends it is drawn a last time.
    func testLiveScanListingDrawsTheTableWhenTheScanEnds() async throws {
        let out = Collected<String>()
        try await ScanListing.run(Self.stream([Self.hrm, Self.beacon]), mode: .live, clock: ManualClock(), write: out.append)
        var table = ScanTable()
        table.update(Self.hrm)
        table.update(Self.beacon)
        XCTAssertEqual(out.all, [table.render(now: .zero)], "the clock never moved: no redraw before the last")
    }

    static func stream(_ devices: [ScannedDevice]) -> AsyncThrowingStream<ScannedDevice, any Error> {
        AsyncThrowingStream { c in
            for d in devices { c.yield(d) }
            c.finish()
        }
    }

    // MARK: - gatt

    static let peer = DeviceAddress(BDAddress(rawValue: 0x00_5A_B1_00_00_06), type: .public)
    static let refused = BLEError.gatt(.att(code: .insufficientAuthentication, handle: 0x0012, request: .readRequest))
    static let database = GATTDatabaseSnapshot(services: [
        .init(service: GATTService(uuid: "1800", handleRange: 0x0001...0x0003), characteristics: [
            .init(characteristic: GATTCharacteristic(uuid: "2A00", declarationHandle: 0x0002, valueHandle: 0x0003, properties: [.read], endHandle: 0x0003),
                  value: .success(Array("Thermo".utf8))),
        ]),
        .init(service: GATTService(uuid: "181A", handleRange: 0x0010...0x0016),
              includedServices: [GATTIncludedService(declarationHandle: 0x0011, serviceHandleRange: 0x0020...0x0022, uuid: "180F")],
              characteristics: [
                  .init(characteristic: GATTCharacteristic(uuid: "2A6E", declarationHandle: 0x0012, valueHandle: 0x0013, properties: [.read, .notify], endHandle: 0x0014),
                        value: .success([0x00, 0x08]),
                        descriptors: [.init(descriptor: GATTDescriptor(handle: 0x0014, uuid: "2902"), value: .success([0x01, 0x00]))]),
                  .init(characteristic: GATTCharacteristic(uuid: "2A6F", declarationHandle: 0x0015, valueHandle: 0x0016, properties: [.read, .write], endHandle: 0x0016),
                        value: .failure(refused)),
              ]),
    ], mtu: 247)

    func testGATTTree() {
        XCTAssertEqual(GATTDatabaseDump.tree(Self.database, address: Self.peer), """
            00:5A:B1:00:00:06 (public), ATT MTU 247
            ├─ Service 1800 Generic Access [0x0001–0x0003]
            │  └─ Characteristic 2A00 Device Name [0x0003] read = "Thermo" (6 bytes)
            └─ Service 181A Environmental Sensing [0x0010–0x0016]
               ├─ Includes 180F Battery Service [0x0020–0x0022]
               ├─ Characteristic 2A6E Temperature [0x0013] read,notify = 0008
               │  └─ Descriptor 2902 Client Characteristic Configuration [0x0014] = 0100
               └─ Characteristic 2A6F Humidity [0x0016] read,write ! \(Self.refused)
            """)
        // Without values (`--no-values`): no "=" or "!" part.
        let bare = GATTDatabaseSnapshot(services: [.init(service: GATTService(uuid: "180F", handleRange: 0x0001...0x0003), characteristics: [
            .init(characteristic: GATTCharacteristic(uuid: "2A19", declarationHandle: 0x0002, valueHandle: 0x0003, properties: [.read, .notify], endHandle: 0x0003)),
        ])], mtu: 23)
        XCTAssertEqual(GATTDatabaseDump.tree(bare, address: Self.peer), """
            00:5A:B1:00:00:06 (public), ATT MTU 23
            └─ Service 180F Battery Service [0x0001–0x0003]
               └─ Characteristic 2A19 Battery Level [0x0003] read,notify
            """)
    }

    func testGATTJSON() {
        XCTAssertEqual(GATTDatabaseDump.json(Self.database, address: Self.peer).text, #"{"address":"00:5A:B1:00:00:06","addressType":"public","mtu":247,"services":["#
            + #"{"uuid":"1800","name":"Generic Access","startHandle":1,"endHandle":3,"includes":[],"characteristics":["#
            + #"{"uuid":"2A00","name":"Device Name","handle":3,"properties":["read"],"value":{"hex":"546865726d6f","utf8":"Thermo"},"descriptors":[]}]},"#
            + #"{"uuid":"181A","name":"Environmental Sensing","startHandle":16,"endHandle":22,"includes":[{"uuid":"180F","startHandle":32,"endHandle":34}],"characteristics":["#
            + #"{"uuid":"2A6E","name":"Temperature","handle":19,"properties":["read","notify"],"value":{"hex":"0008","utf8":"\u0000\u0008"},"#
            + #""descriptors":[{"uuid":"2902","name":"Client Characteristic Configuration","handle":20,"value":{"hex":"0100","utf8":"\u0001\u0000"}}]},"#
            + #"{"uuid":"2A6F","name":"Humidity","handle":22,"properties":["read","write"],"error":"\#(Self.refused)","descriptors":[]}]}]}"#)
    }

    // MARK: - radio

    func testRadioLogLinesInBothForms() {
        let address = BDAddress(rawValue: 0x00_5A_B1_00_00_01)
        for json in [false, true] {
            let out = Collected<String>()
            let log = RadioLog(json: json, output: out.append)
            log.listening("tcp:127.0.0.1:6402", port: 6402)
            log.connected(controller: 1, peer: "127.0.0.1:50000", address: address)
            log.disconnected(controller: 1, peer: "127.0.0.1:50000", address: address, end: .hostClosed)
            log.disconnected(controller: 2, peer: "127.0.0.1:50001", address: address, end: .radioClosed)
            log.stopped()
            XCTAssertEqual(out.all, json ? [
                #"{"event":"listening","listen":"tcp:127.0.0.1:6402","port":6402}"#,
                #"{"event":"connected","controller":1,"peer":"127.0.0.1:50000","address":"00:5A:B1:00:00:01"}"#,
                #"{"event":"disconnected","controller":1,"peer":"127.0.0.1:50000","reason":"host closed the connection"}"#,
                #"{"event":"disconnected","controller":2,"peer":"127.0.0.1:50001","reason":"radio stopped"}"#,
                #"{"event":"stopped"}"#,
            ] : [
                "virtual radio listening on tcp:127.0.0.1:6402",
                "connected: controller 1 (00:5A:B1:00:00:01) for 127.0.0.1:50000",
                "disconnected: controller 1 (00:5A:B1:00:00:01): host closed the connection",
                "disconnected: controller 2 (00:5A:B1:00:00:01): radio stopped",
                "virtual radio stopped",
            ])
        }
    }
}
