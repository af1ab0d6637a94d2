import BLEHTTP
import XCTest

/// A browser leaves the port out of `Host` when it is HTTP's default, 80 (RFC 9110 §4.2.1,
/// RFC 3986 §6.2.3): a server on port 80 must take `Host: 192.168.1.7` as `192.168.1.7:80`,
/// and a server on any other port must still refuse a Host without one.
final class HTTPAccessPolicyDefaultPortTests: XCTestCase {
    func request(host: String) -> HTTPRequest {
        HTTPRequest(method: "GET", target: "/devices?token=t", headers: [("Host", host)])
    }

    func testOnPort80AHostWithoutAPortIsThatHostOnPort80() {
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: HTTPAccessPolicy.hosts(boundTo: "127.0.0.1", port: 80))
        for host in ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "127.0.0.1:80", "[::1]:80"] {
            XCTAssertEqual(policy.check(request(host: host)), .allow, host)
        }
        for host in ["rebound.example", "0.0.0.0", "127.0.0.2", "", "[::1", "127.0.0.1:8080"] {
            guard case let .refuse(response) = policy.check(request(host: host)) else { return XCTFail("\(host) admitted") }
            XCTAssertEqual(response.status.code, 421, host)
        }
    }

    func testOnAnotherPortAHostWithoutAPortIsRefused() {
        let policy = HTTPAccessPolicy(token: "t", allowedHosts: HTTPAccessPolicy.hosts(boundTo: "127.0.0.1", port: 8765))
        XCTAssertEqual(policy.check(request(host: "127.0.0.1:8765")), .allow)
        for host in ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:80"] {
            guard case let .refuse(response) = policy.check(request(host: host)) else { return XCTFail("\(host) admitted") }
            XCTAssertEqual(response.status.code, 421, host)
        }
    }
}
