import Foundation
import XCTest

/// `ble gateway` against a broker that requires TLS and a password: it connects with `--ca`,
/// `--username` and `--password-file`; a wrong password or an untrusted certificate keeps it
/// out (said in its log, retried with back-off), and the password never appears in what it says.
final class GatewayAuthenticationTests: XCTestCase {
    static let user = "gw-lab"

    /// The password in a file only this user reads.
    func passwordFile(_ password: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gw-auth-\(getpid())-\(UInt32.random(in: 1...999_999))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("password")
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data((password + "\n").utf8), attributes: [.posixPermissions: 0o600]))
        return file
    }

    func testTLSAndPasswordAreRequiredAndSuffice() async throws {
        let secret = "s3cret-\(UInt32.random(in: 1...999_999))"
        let broker = try await startMosquitto(.tls.withPassword(user: Self.user, password: secret))
        XCTAssertTrue(broker.url.hasPrefix("mqtts://"))
        let watch = try await MosquittoSubscription.start(MosquittoClientOptions(broker: broker), topics: ["ble/+/status", "ble/+/adv/+"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("secure", broker: broker, arguments: [
            "--hci", "virtual", "--username", Self.user, "--password-file", try passwordFile(secret).path,
        ])
        try await watch.waitFor("online over TLS", timeout: 20) { $0.topic == "ble/secure/status" && $0.text == "online" }
        try await watch.waitFor("an advertisement over TLS", timeout: 20) { $0.topic.hasPrefix("ble/secure/adv/") }
        gateway.stop()
        XCTAssertFalse(gateway.log.joined(separator: "\n").contains(secret), "the password is never printed")
    }

    /// Over TLS the gateway reconnects after the broker restarts (libmosquitto's TLS context
    /// from the first connection must not stop the second).
    func testAGatewayOverTLSReconnectsAfterABrokerRestart() async throws {
        let broker = try await startMosquitto(.tls)
        let watch = try await MosquittoSubscription.start(MosquittoClientOptions(broker: broker), topics: ["ble/+/status"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("tls-again", broker: broker, arguments: ["--hci", "virtual"])
        try await watch.waitFor("online", timeout: 20) { $0.topic == "ble/tls-again/status" && $0.text == "online" }
        try await broker.restart()
        try await gateway.waitForLog("trying again", timeout: 20)
        try await watch.waitUntilSubscribed(count: 2, timeout: 30)
        try await watch.waitFor("online again", timeout: 30) { $0.topic == "ble/tls-again/status" && $0.text == "online" }
        try await gateway.waitForLog("connected to mqtts://", count: 2, timeout: 20)
    }

    func testAWrongPasswordIsRefusedAndRetried() async throws {
        let broker = try await startMosquitto(.password(user: Self.user, password: "right-one"))
        let watch = try await MosquittoSubscription.start(MosquittoClientOptions(broker: broker), topics: ["ble/+/status"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("locked-out", broker: broker, arguments: [
            "--hci", "virtual", "--username", Self.user, "--password-file", try passwordFile("wrong-one").path,
        ])
        let refusal = try await gateway.waitForLog("refused the connection", timeout: 20)
        XCTAssertTrue(refusal.contains("trying again in"), refusal)
        // Tried again after the first delay, and refused again: back-off, not a give-up.
        try await gateway.waitForLog("refused the connection", count: 2, timeout: 20)
        let refusals = gateway.log.filter { $0.contains("refused the connection") }
        XCTAssertGreaterThanOrEqual(refusals.count, 2, gateway.log.joined(separator: "\n"))
        XCTAssertTrue(refusals.dropFirst().first?.contains("2.0 seconds") == true, "the delay doubles: \(refusals)")
        XCTAssertFalse(watch.messages.contains { $0.topic == "ble/locked-out/status" && $0.text == "online" })
        XCTAssertFalse(gateway.log.joined(separator: "\n").contains("wrong-one"))
    }

    func testAnUntrustedCertificateKeepsTheGatewayOut() async throws {
        let broker = try await startMosquitto(.tls)
        // No --ca: the system's CAs do not know the test CA that signed the broker's certificate.
        let gateway = try GatewayProcess(name: "untrusting", broker: broker.url, arguments: ["--hci", "virtual"])
        addTeardownBlock { gateway.stop() }
        let failure = try await gateway.waitForLog("TLS", timeout: 20)
        XCTAssertTrue(failure.contains("mqtts://localhost"), failure)
        // Tried again, and refused again for the same reason.
        try await gateway.waitForLog("trying again in 2.0 seconds", timeout: 20)
        XCTAssertEqual(gateway.log.filter { $0.contains("trying again") }.allSatisfy { $0.contains("TLS") }, true, gateway.log.joined(separator: "\n"))
        XCTAssertFalse(gateway.log.contains { $0.contains("connected to mqtts") }, gateway.log.joined(separator: "\n"))
    }

    func testCredentialsInTheURLAreRefusedWithoutEchoingThem() throws {
        let result = try BLETool.run(["gateway", "--hci", "virtual", "--broker", "mqtt://user:hunter2@127.0.0.1:1883"], timeout: 20)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("--password-file"), result.stderr)
        XCTAssertFalse(result.stderr.contains("hunter2"), result.stderr)
    }
}
