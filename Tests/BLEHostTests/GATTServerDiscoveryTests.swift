import XCTest
import BLEWire
@testable import BLEHost

/// Server side of the GATT test suite's GAC (MTU exchange) and GAD (discovery) categories,
/// as PDU scripts against `GATTServerFixture` (handle map in GATTServerScript.swift).
final class GATTServerDiscoveryTests: XCTestCase {
    let s1 = GATTServerFixture.s1.littleEndian128.hexString
    let c1 = GATTServerFixture.c1.littleEndian128.hexString
    let d1 = GATTServerFixture.d1.littleEndian128.hexString

    // MARK: GAC

    /// GATT/SR/GAC/BV-01-C: the server answers with its Rx MTU and uses the smaller one.
    func testGAC_BV01_ExchangeMTU() {
        var h = GATTServerHarness()
        h.run(["C: 02 0002", "S: 03 0502"])
        XCTAssertEqual(h.server.mtu, 512)
        XCTAssertEqual(h.events, [.mtuChanged(512)])
        // A second request (a misbehaving client) is answered but changes nothing.
        h.run(["C: 02 1700", "S: 03 0502"])
        XCTAssertEqual(h.server.mtu, 512)
        XCTAssertEqual(h.events, [.mtuChanged(512)])
    }

    func testGAC_ClientMTUAboveOursUsesOurs() {
        var h = GATTServerHarness(server: ATTServer(preferredMTU: 100))
        h.run(["C: 02 0502", "S: 03 6400"])
        XCTAssertEqual(h.server.mtu, 100)
    }

    /// §3.4.2.2: a Client Rx MTU below 23 leaves ATT_MTU at the default.
    func testGAC_ClientMTUBelowDefaultKeepsDefault() {
        var h = GATTServerHarness()
        h.run(["C: 02 1000", "S: 03 0502"])
        XCTAssertEqual(h.server.mtu, 23)
        XCTAssertEqual(h.events, [])
    }

    // MARK: GAD

    /// GATT/SR/GAD/BV-01-C: Discover All Primary Services with Read By Group Type.
    func testGAD_BV01_DiscoverAllPrimaryServices() {
        var h = GATTServerHarness()
        h.run([
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018 0600 0d00 0118 0e00 2600 a0aa",
            "C: 10 2700 ffff 0028",
            "S: 11 06 2a00 2e00 c0cc",
            "C: 10 2f00 ffff 0028",
            "S: 01 10 2f00 0a",
        ])
    }

    /// Secondary services are found by their own group type, 128-bit UUIDs in their own PDU.
    func testGAD_ReadByGroupTypeSecondaryAndUnsupported() {
        var h = GATTServerHarness()
        h.run([
            "C: 10 0100 ffff 0128", "S: 11 14 2700 2900 \(s1)",
            "C: 10 0100 ffff 0328", "S: 01 10 0100 10",
            "C: 10 0000 ffff 0028", "S: 01 10 0000 01",
            "C: 10 0500 0400 0028", "S: 01 10 0500 01",
        ])
    }

    /// GATT/SR/GAD/BV-02-C: Discover Primary Service by UUID with Find By Type Value, including
    /// the 128-bit spelling of a 16-bit UUID.
    func testGAD_BV02_DiscoverPrimaryServiceByUUID() {
        var h = GATTServerHarness()
        let aaa0long = BluetoothUUID(0xAAA0).littleEndian128.hexString
        h.run([
            "C: 06 0100 ffff 0028 a0aa", "S: 07 0e00 2600",
            "C: 06 2700 ffff 0028 a0aa", "S: 01 06 2700 0a",
            "C: 06 0100 ffff 0028 \(aaa0long)", "S: 07 0e00 2600",
            // A secondary service is not a primary one.
            "C: 06 0100 ffff 0028 \(s1)", "S: 01 06 0100 0a",
            "C: 06 0000 ffff 0028 a0aa", "S: 01 06 0000 01",
        ])
    }

    /// Find By Type Value on a non-grouping type: the group end is the found handle.
    func testGAD_FindByTypeValueNonGrouping() {
        var h = GATTServerHarness()
        h.run(["C: 06 0100 ffff a1aa 68656c6c6f", "S: 07 1000 1000"])
        // An attribute this link may not read is never matched (no security error, §3.4.3.3).
        h.run(["C: 06 0100 ffff a4aa 42", "S: 01 06 0100 0a"])
    }

    /// GATT/SR/GAD/BV-03-C: Find Included Services.
    func testGAD_BV03_FindIncludedServices() {
        var h = GATTServerHarness()
        h.run([
            "C: 08 2a00 2e00 0228", "S: 09 06 2b00 2700 2900",
            "C: 08 2c00 2e00 0228", "S: 01 08 2c00 0a",
            // The included 128-bit service's UUID is read from its declaration.
            "C: 0a 2700", "S: 0b \(s1)",
        ])
    }

    /// GATT/SR/GAD/BV-04-C: Discover All Characteristics of a Service, three per PDU at MTU 23.
    func testGAD_BV04_DiscoverAllCharacteristics() {
        var h = GATTServerHarness()
        h.run([
            "C: 08 0e00 2600 0328",
            "S: 09 07 0f00 8a1000a1aa 1300 021400a2aa 1500 321600a3aa",
            "C: 08 1600 2600 0328",
            "S: 09 07 1800 021900a4aa 1a00 021b00a5aa 1c00 021d00a6aa",
            "C: 08 1d00 2600 0328",
            "S: 09 07 1e00 081f00a7aa 2000 0a2100a8aa 2200 022300a9aa",
            "C: 08 2300 2600 0328",
            "S: 09 07 2400 122500aaaa",
            "C: 08 2600 2600 0328",
            "S: 01 08 2600 0a",
            // A 128-bit characteristic fills a PDU of its own.
            "C: 08 2700 2900 0328",
            "S: 09 15 2800 02 2900 \(c1)",
        ])
    }

    /// GATT/SR/GAD/BV-05-C: Discover Characteristics by UUID reads all declarations and the
    /// client filters; with ATT_MTU 64, eight 7-octet pairs fit one PDU.
    func testGAD_BV05_DiscoverCharacteristicsLargeMTU() {
        var h = GATTServerHarness()
        h.run([
            "C: 02 4000", "S: 03 0502",
            "C: 08 0e00 2600 0328",
            "S: 09 07 0f00 8a1000a1aa 1300 021400a2aa 1500 321600a3aa 1800 021900a4aa 1a00 021b00a5aa"
                + " 1c00 021d00a6aa 1e00 081f00a7aa 2000 0a2100a8aa",
        ])
    }

    /// GATT/SR/GAD/BV-06-C: Discover All Characteristic Descriptors with Find Information,
    /// 16-bit (format 1) and 128-bit (format 2), never mixed in one PDU.
    func testGAD_BV06_DiscoverDescriptors() {
        var h = GATTServerHarness()
        h.run([
            "C: 04 1100 1200", "S: 05 01 1100 0029 1200 0129",
            "C: 04 1700 1700", "S: 05 01 1700 0229",
            "C: 04 2e00 2e00", "S: 05 02 2e00 \(d1)",
            "C: 04 2d00 2e00", "S: 05 01 2d00 c1cc",
            "C: 04 2f00 ffff", "S: 01 04 2f00 0a",
            "C: 04 0100 ffff", "S: 05 01 0100 0028 0200 0328 0300 002a 0400 0328 0500 012a",
            "C: 04 0000 0100", "S: 01 04 0000 01",
            "C: 04 0500 0400", "S: 01 04 0500 01",
        ])
    }
}
