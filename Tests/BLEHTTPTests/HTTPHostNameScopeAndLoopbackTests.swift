import BLEHTTP
import XCTest

/// Two corners of host names a review found: a scoped IPv6 address given to `--listen`
/// (RFC 4007 §11: `fe80::1%eth0`) and DNS names that begin like an IPv4 loopback address.
final class HTTPHostNameScopeAndLoopbackTests: XCTestCase {
    /// The brackets go, the address is written canonically, and the zone stays as written
    /// (interface names are case-sensitive), so the result can be bound.
    func testAScopedAddressLosesItsBracketsAndKeepsItsZone() {
        XCTAssertEqual(HTTPHostName.canonical("[fe80::1%eth0]"), "fe80::1%eth0")
        XCTAssertEqual(HTTPHostName.canonical("[FE80:0:0:0:0:0:0:1%Eth0]"), "fe80::1%Eth0")
        XCTAssertEqual(HTTPHostName.canonical("fe80::0001%wlan0"), "fe80::1%wlan0")
        XCTAssertEqual(HTTPHostName.join("[fe80::1%eth0]", port: 8765), "[fe80::1%eth0]:8765")
        // Not an address with a zone: lowercased only, as any other text.
        XCTAssertEqual(HTTPHostName.canonical("fe80::1%"), "fe80::1%")
        XCTAssertEqual(HTTPHostName.canonical("Host%Name"), "host%name")
    }

    func testOnlyAddressesIn127Slash8AreLoopbackNotNamesThatLookLikeThem() {
        for host in ["127.0.0.1", "127.1.2.3", "127.255.255.255", "::ffff:127.0.0.1", "localhost", "LOCALHOST", "::1"] {
            XCTAssertTrue(HTTPAccessPolicy.isLoopback(host), host)
        }
        for host in ["127.example.net", "127.0.0.1.nip.io", "127.0.0", "127.0.0.256", "127.00.0.1", "128.0.0.1", "::ffff:10.0.0.1", "10.127.0.1"] {
            XCTAssertFalse(HTTPAccessPolicy.isLoopback(host), host)
        }
    }

    func testIPv4OctetsAcceptsOnlyDottedDecimal() {
        XCTAssertEqual(HTTPHostName.ipv4Octets("192.168.0.10"), [192, 168, 0, 10])
        XCTAssertEqual(HTTPHostName.ipv4Octets("0.0.0.0"), [0, 0, 0, 0])
        for text in ["", "1.2.3", "1.2.3.4.5", "1..2.3", "01.2.3.4", "1.2.3.-4", "1.2.3.1000", "a.b.c.d", "1.2.3.4 "] {
            XCTAssertNil(HTTPHostName.ipv4Octets(text), text)
        }
    }
}
