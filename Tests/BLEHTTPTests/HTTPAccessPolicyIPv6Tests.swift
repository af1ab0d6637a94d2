import BLEHTTP
import XCTest

/// One IPv6 address has many spellings (RFC 4291 §2.2; RFC 5952 §4 names the canonical one):
/// however `--listen`, `--allow-host`, an interface or a browser's `Host` field writes it, in
/// brackets or not, in upper or lower case, with leading zeros or `::`, with or without the
/// port, the server answers to that address, and to no other.
final class HTTPAccessPolicyIPv6Tests: XCTestCase {
    func request(host: String) -> HTTPRequest {
        HTTPRequest(method: "GET", target: "/devices?token=t", headers: [("Host", host)])
    }

    func assertAdmits(_ policy: HTTPAccessPolicy, _ hosts: [String], file: StaticString = #filePath, line: UInt = #line) {
        for host in hosts {
            XCTAssertEqual(policy.check(request(host: host)), .allow, host, file: file, line: line)
        }
    }

    func assertRefuses(_ policy: HTTPAccessPolicy, _ hosts: [String], file: StaticString = #filePath, line: UInt = #line) {
        for host in hosts {
            guard case let .refuse(response) = policy.check(request(host: host)) else {
                XCTFail("\(host) admitted", file: file, line: line)
                continue
            }
            XCTAssertEqual(response.status.code, 421, host, file: file, line: line)
        }
    }

    /// Bound to the loopback address spelt out in full: still loopback, with its names.
    func testTheLoopbackAddressInAnySpellingIsLoopback() {
        for spelling in ["::1", "[::1]", "0:0:0:0:0:0:0:1", "0000:0000::0001", "[0::1]"] {
            XCTAssertTrue(HTTPAccessPolicy.isLoopback(spelling), spelling)
            let policy = HTTPAccessPolicy(token: "t", allowedHosts: HTTPAccessPolicy.hosts(boundTo: spelling, port: 8765))
            assertAdmits(policy, ["[::1]:8765", "[0:0:0:0:0:0:0:1]:8765", "[::0001]:8765", "localhost:8765", "127.0.0.1:8765"])
            assertRefuses(policy, ["[::2]:8765", "[::1]:8766", "::1:8765", "[::1]"])
        }
        for spelling in ["::", "[::]", "0:0:0:0:0:0:0:0", "0::0"] {
            XCTAssertTrue(HTTPAccessPolicy.isWildcard(spelling), spelling)
        }
    }

    /// An interface address and an `--allow-host` address are matched in any spelling of the
    /// `Host` field, and the field's spelling does not matter either.
    func testInterfaceAndAllowedAddressesMatchEverySpellingOfTheHost() {
        let hosts = HTTPAccessPolicy.hosts(boundTo: "::", port: 8765, interfaceAddresses: ["2001:DB8:0:0:0:0:0:5", "FE80::0A"],
                                           names: ["2001:db8::00ff", "[2001:db8::7]", "Pi.Local"])
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: hosts)
        assertAdmits(policy, ["[2001:db8::5]:8765", "[2001:DB8::5]:8765", "[2001:0db8:0000::0005]:8765",
                              "[fe80::a]:8765", "[FE80:0:0:0:0:0:0:A]:8765",
                              "[2001:db8::ff]:8765", "[2001:db8::7]:8765", "pi.local:8765", "PI.local:08765"])
        assertRefuses(policy, ["[2001:db8::6]:8765", "[2001:db8::5]:80", "[2001:db8::5]", "2001:db8::5:8765",
                               "[2001:db8::5%25eth0]:8765", "[2001:db8::5:8765", "[::]:8765", "[2001:db8::5]:", "[2001:db8::5]:x"])
    }

    /// On port 80 a browser leaves the port out: `[v6]` is `[v6]:80`, in any spelling.
    func testWithoutThePortAnAddressIsOnPort80() {
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: HTTPAccessPolicy.hosts(boundTo: "2001:db8::5", port: 80))
        assertAdmits(policy, ["[2001:db8::5]", "[2001:DB8:0::5]", "[2001:db8::5]:80"])
        assertRefuses(policy, ["2001:db8::5", "[2001:db8::5]:8080"])
    }

    /// The names a caller gives in `allowedHosts` compare the same way.
    func testGivenAllowedHostsAreNormalisedToo() {
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: ["[0:0::1]:8765", "Example.ORG:8765"])
        assertAdmits(policy, ["[::1]:8765", "example.org:8765"])
    }

    /// `--allow-host`: a name or an address without a port, an IPv6 one in brackets or not, in
    /// its canonical form; anything else is not a host.
    func testAHostGivenWithoutAPortIsCanonicalOrRefused() {
        XCTAssertEqual(HTTPHostName.hostWithoutPort("Pi.Local"), "pi.local")
        XCTAssertEqual(HTTPHostName.hostWithoutPort("[::1]"), "::1")
        XCTAssertEqual(HTTPHostName.hostWithoutPort("0:0:0:0:0:0:0:1"), "::1")
        XCTAssertEqual(HTTPHostName.hostWithoutPort("2001:DB8:0:0:1:0:0:1"), "2001:db8::1:0:0:1")
        XCTAssertEqual(HTTPHostName.hostWithoutPort("::FFFF:192.0.2.1"), "::ffff:192.0.2.1")
        XCTAssertEqual(HTTPHostName.hostWithoutPort("192.0.2.1"), "192.0.2.1")
        for bad in ["", "pi.local:8765", "[::1]:8765", "::::", "1:2:3", "[pi.local]", "a b", "fe80::1%eth0", "1::2::3", "12345::1", "::1.2.3.04"] {
            XCTAssertNil(HTTPHostName.hostWithoutPort(bad), bad)
        }
    }

    /// RFC 5952 §4.2: the longest run of zero groups is the one shortened, the first of equal
    /// runs, never a single group.
    func testTheCanonicalTextShortensTheLongestRunOfZeros() {
        XCTAssertEqual(HTTPHostName.canonical("2001:db8:0:0:1:0:0:0"), "2001:db8:0:0:1::")
        XCTAssertEqual(HTTPHostName.canonical("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1")
        XCTAssertEqual(HTTPHostName.canonical("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1")
        XCTAssertEqual(HTTPHostName.canonical("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1")
        XCTAssertEqual(HTTPHostName.canonical("[::]"), "::")
        XCTAssertEqual(HTTPHostName.canonical("Example.ORG"), "example.org")
    }
}
