import BLEHTTP
import XCTest

/// `ble ui --listen 0.0.0.0:PORT`: a server bound to every interface answers to the machine's
/// addresses and the `--allow-host` names, and still to nothing else (DNS rebinding).
final class HTTPAccessPolicyWildcardTests: XCTestCase {
    func request(host: String) -> HTTPRequest {
        HTTPRequest(method: "GET", target: "/devices?token=t", headers: [("Host", host)])
    }

    func testAWildcardBindAnswersToTheInterfaceAddressesAndTheGivenNames() {
        let hosts = HTTPAccessPolicy.hosts(boundTo: "0.0.0.0", port: 8765, interfaceAddresses: ["127.0.0.1", "192.168.1.7", "fe80::1", "::1"],
                                           names: ["Pi.local"])
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: hosts)
        for host in ["192.168.1.7:8765", "[fe80::1]:8765", "pi.local:8765", "PI.LOCAL:8765", "127.0.0.1:8765", "localhost:8765", "[::1]:8765"] {
            XCTAssertEqual(policy.check(request(host: host)), .allow, host)
        }
        for host in ["0.0.0.0:8765", "192.168.1.8:8765", "192.168.1.7:8766", "rebound.example:8765", "pi.local"] {
            guard case let .refuse(response) = policy.check(request(host: host)) else { return XCTFail("\(host) admitted") }
            XCTAssertEqual(response.status.code, 421, host)
        }
    }

    func testTheIPv6WildcardToo() {
        XCTAssertTrue(HTTPAccessPolicy.isWildcard("::"))
        XCTAssertTrue(HTTPAccessPolicy.isWildcard("0.0.0.0"))
        XCTAssertFalse(HTTPAccessPolicy.isWildcard("192.168.1.7"))
        let hosts = HTTPAccessPolicy.hosts(boundTo: "::", port: 1, interfaceAddresses: ["2001:db8::5"], names: [])
        XCTAssertTrue(hosts.contains("[2001:db8::5]:1"), "\(hosts)")
        XCTAssertFalse(hosts.contains("[::]:1"), "the wildcard names no machine")
    }

    /// Bound to one address, the names given are added to it, and no interface address is.
    func testASpecificBindTakesOnlyItsAddressAndTheNames() {
        let hosts = HTTPAccessPolicy.hosts(boundTo: "192.168.1.7", port: 80, interfaceAddresses: ["10.0.0.2"], names: ["pi.local"])
        XCTAssertEqual(hosts, ["192.168.1.7:80", "pi.local:80"])
    }

    func testLoopbackIsTold() {
        XCTAssertTrue(HTTPAccessPolicy.isLoopback("127.0.0.1"))
        XCTAssertTrue(HTTPAccessPolicy.isLoopback("::1"))
        XCTAssertTrue(HTTPAccessPolicy.isLoopback("localhost"))
        XCTAssertFalse(HTTPAccessPolicy.isLoopback("0.0.0.0"))
        XCTAssertFalse(HTTPAccessPolicy.isLoopback("192.168.1.7"))
    }
}
