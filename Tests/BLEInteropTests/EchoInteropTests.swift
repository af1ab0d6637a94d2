import Foundation
import XCTest

/// docs/SYSTEMS.md S1 over rootcanal, both directions: `ble serve echo` against Bumble's echo client
/// (`peers/echo_client.py`), and `ble echo` / `ble fetch` against Bumble's echo server
/// (`peers/echo_server.py`).
final class EchoInteropTests: XCTestCase {
    /// `ble serve echo`, serving the files under `files` (`--files DIR`) when given.
    func serve(_ env: InteropEnvironment, files: URL? = nil) throws -> ServeProcess {
        let process = try ServeProcess(profile: "echo", name: "EchoServer", arguments: files.map { ["--files", $0.path] } ?? [], environment: env)
        addTeardownBlock { process.stop() }
        return process
    }

    /// A new directory for the files a test serves, removed after the test.
    func servedDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("echo-interop-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func ble(_ arguments: [String], _ env: InteropEnvironment, timeout: TimeInterval = 120) throws -> ProcessResult {
        try BLETool.run(arguments + ["--hci", env.rootcanal], timeout: timeout)
    }

    /// A temporary file of `count` bytes (every byte value, not UTF-8) in `directory`, removed
    /// after the test.
    func temporaryFile(_ count: Int, in directory: URL = FileManager.default.temporaryDirectory) throws -> (URL, Data) {
        var state: UInt32 = 0x2545_F491
        let bytes = (0..<count).map { _ -> UInt8 in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
        let url = directory.appendingPathComponent("echo-interop-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).bin")
        try Data(bytes).write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return (url, Data(bytes))
    }

    func jsonObject(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(text)")
    }

    // MARK: Bumble central → ble serve echo

    /// One Bumble client sends a short text, a text longer than ATT_MTU − 3, a URL of a 30 kB
    /// file and a malformed header, as one stream cut into writes: every answer comes back in
    /// order, the image byte for byte.
    func testBumbleClientGetsEchoesAnImageAndAnError() throws {
        let env = try InteropEnvironment.current()
        let files = try servedDirectory()
        let server = try serve(env, files: files)
        let (file, contents) = try temporaryFile(30_000, in: files)
        let output = file.appendingPathExtension("copy")
        addTeardownBlock { try? FileManager.default.removeItem(at: output) }
        let long = String(repeating: "a longer text than one write ", count: 20)
        let client = try startPeer("echo_client.py", arguments: [
            "--target", server.address.description, "--text", "hello", "--text", long,
            "--url", file.absoluteString, "--raw", "5430303078303030", "--text", "after the error",
            "--output", output.path, "--timeout", "90",
        ], environment: env)
        let first = try client.waitForEvent("reply", timeout: 60)
        XCTAssertEqual(first.string("text"), "You said: hello")
        let second = try client.waitForEvent("reply", timeout: 30)
        XCTAssertEqual(second.string("text"), "You said: " + long)
        XCTAssertGreaterThan(second.int("notifications") ?? 0, 1, "the long echo spans notifications")
        let image = try client.waitForEvent("reply", timeout: 60)
        XCTAssertEqual(image.string("code"), "I")
        XCTAssertEqual(image.int("size"), contents.count)
        let mtu = try XCTUnwrap(image.int("mtu"))
        XCTAssertLessThanOrEqual(image.int("max_notification") ?? 0, min(mtu - 3, 512))
        XCTAssertEqual(try Data(contentsOf: output), contents, "byte-exact")
        let error = try client.waitForEvent("reply", timeout: 30)
        XCTAssertTrue(error.string("text")?.hasPrefix("error: framed stream: size field \"000x000\"") ?? false, "\(error)")
        let recovered = try client.waitForEvent("reply", timeout: 30)
        XCTAssertEqual(recovered.string("text"), "You said: after the error")
        try client.waitForEvent("done", timeout: 30)

        XCTAssertEqual(server.count("frame"), 4, "hello, the long text, the URL, the text after the error")
        // The log in order: the fetch happens before the malformed header arrives.
        try server.waitFor("fetched") { $0["size"] as? Int == contents.count }
        try server.waitFor("frameError")
        try server.waitForCount("reply", count: 5)
    }

    /// At ATT_MTU 23 (no MTU exchange) the answers go out in notifications of 20 bytes.
    func testBumbleClientAtTheMinimumMTU() throws {
        let env = try InteropEnvironment.current()
        let server = try serve(env)
        let text = String(repeating: "0123456789", count: 10)
        let client = try startPeer("echo_client.py", arguments: [
            "--target", server.address.description, "--mtu", "0", "--text", text,
        ], environment: env)
        let reply = try client.waitForEvent("reply", timeout: 60)
        XCTAssertEqual(reply.string("text"), "You said: " + text)
        XCTAssertEqual(reply.int("mtu"), 23)
        XCTAssertEqual(reply.int("max_notification"), 20)
        XCTAssertEqual(reply.int("notifications"), 6, "118 bytes in notifications of 20")
        try client.waitForEvent("done", timeout: 30)
        let logged = try server.waitFor("reply")
        XCTAssertEqual(logged["maxNotification"] as? Int, 20)
    }

    /// Two Bumble clients at once: each gets its own answers.
    func testTwoBumbleClientsAtOnce() throws {
        let env = try InteropEnvironment.current()
        let files = try servedDirectory()
        let server = try serve(env, files: files)
        let (file, contents) = try temporaryFile(20_000, in: files)
        let output = file.appendingPathExtension("copy")
        addTeardownBlock { try? FileManager.default.removeItem(at: output) }
        let a = try startPeer("echo_client.py", arguments: [
            "--target", server.address.description, "--url", file.absoluteString, "--output", output.path, "--timeout", "90",
        ], environment: env)
        let b = try startPeer("echo_client.py", arguments: [
            "--target", server.address.description, "--text", "from b", "--text", "again from b",
        ], environment: env)
        XCTAssertEqual(try b.waitForEvent("reply", timeout: 60).string("text"), "You said: from b")
        XCTAssertEqual(try b.waitForEvent("reply", timeout: 30).string("text"), "You said: again from b")
        XCTAssertEqual(try a.waitForEvent("reply", timeout: 90).int("size"), contents.count)
        try a.waitForEvent("done", timeout: 30)
        try b.waitForEvent("done", timeout: 30)
        XCTAssertEqual(try Data(contentsOf: output), contents)
        XCTAssertEqual(Set(server.events.filter { $0["event"] as? String == "reply" }.compactMap { $0["connection"] as? Int }).count, 2)
    }

    /// file:// URLs: refused by a server started without `--files`, and outside the directory
    /// by one started with it, each with a `T` error the client receives.
    func testFileURLsAreRefusedWithoutFilesAndOutsideTheDirectory() throws {
        let env = try InteropEnvironment.current()
        let plain = try serve(env)
        let client = try startPeer("echo_client.py", arguments: [
            "--target", plain.address.description, "--url", "file:///etc/passwd",
        ], environment: env)
        XCTAssertEqual(try client.waitForEvent("reply", timeout: 60).string("text"),
                       "error: file:// URLs are not served; start the server with --files DIR")
        try client.waitForEvent("done", timeout: 30)
        plain.stop()

        let files = try servedDirectory()
        let real = files.resolvingSymlinksInPath().path
        let serving = try serve(env, files: files)
        let outside = try startPeer("echo_client.py", arguments: [
            "--target", serving.address.description, "--url", files.absoluteString + "/../../etc/passwd",
        ], environment: env)
        let refused = try outside.waitForEvent("reply", timeout: 60)
        XCTAssertEqual(refused.string("text"), "error: cannot serve \(files.path)/../../etc/passwd: it is outside \(real)")
        try outside.waitForEvent("done", timeout: 30)
    }

    // MARK: ble echo / ble fetch → Bumble server

    func testBleEchoAgainstTheBumbleServer() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("echo_server.py", environment: env)
        let result = try ble(["echo", "hello from swift", peer.address.description], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.map { String($0.prefix(while: { $0 != " " })) },
                       ["poweredOn", "scanning", "discovered", "connecting", "connected", "sending", "reply", "closed", "You"], result.stdout)
        XCTAssertTrue(lines[2].contains("EchoServer") && lines[2].contains(peer.address.description), lines[2])
        XCTAssertEqual(lines.last, "You said: hello from swift")
        let frame = try peer.waitForEvent("frame", timeout: 10)
        XCTAssertEqual(frame.string("text"), "hello from swift")

        // Longer than one write at ATT_MTU 23, and as JSON.
        let long = String(repeating: "spans several writes ", count: 8)
        let json = try ble(["echo", long, peer.address.description, "--mtu", "23", "--json"], env)
        XCTAssertTrue(json.succeeded, "\(json)")
        XCTAssertEqual(try jsonObject(json.stdout)["reply"] as? String, "You said: " + long)
        let written = try peer.waitForEvent("frame", timeout: 10) { $0.string("text") == long }
        XCTAssertEqual(written.int("size"), long.utf8.count)
        XCTAssertGreaterThan(peer.events.filter { $0.name == "write" && $0.int("length") == 20 }.count, 1, "20-byte writes")
    }

    func testBleFetchSavesTheImageAndReportsAFailedFetch() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("echo_server.py", environment: env)
        let (file, contents) = try temporaryFile(100_000)
        let output = file.appendingPathExtension("fetched")
        addTeardownBlock { try? FileManager.default.removeItem(at: output) }
        let result = try ble(["fetch", file.absoluteString, "-o", output.path, peer.address.description, "--json"], env, timeout: 180)
        XCTAssertTrue(result.succeeded, "\(result)")
        let object = try jsonObject(result.stdout)
        XCTAssertEqual(object["file"] as? String, output.path)
        XCTAssertEqual(object["bytes"] as? Int, contents.count)
        XCTAssertEqual(try Data(contentsOf: output), contents, "byte-exact")

        let plain = try ble(["fetch", file.absoluteString, "-o", output.path, peer.address.description], env, timeout: 180)
        XCTAssertTrue(plain.succeeded, "\(plain)")
        XCTAssertTrue(plain.stdout.contains("receiving   "), "a progress line per tenth when not on a terminal: \(plain.stdout)")
        XCTAssertTrue(plain.stdout.contains("saved       \(contents.count) bytes to \(output.path)"), plain.stdout)

        let missing = try ble(["fetch", "file:///nonexistent/echo-interop.png", "-o", output.path, peer.address.description], env)
        XCTAssertEqual(missing.status, 1, "\(missing)")
        XCTAssertTrue(missing.stderr.contains("the server answered: error: cannot fetch"), missing.stderr)
    }

    /// SIGINT in the middle of a fetch: exit status 130, and the peer sees the link closed by us
    /// (Remote User Terminated Connection, 19), not a supervision timeout. "In the middle" is an
    /// explicit event, not a guess at the link's speed: the first progress line says a tenth has
    /// arrived, and the peer is then frozen (SIGSTOP) so the rest cannot arrive before the
    /// interrupt, however fast the link.
    func testFetchStopsCleanlyOnInterrupt() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("echo_server.py", environment: env)
        let (file, _) = try temporaryFile(2_000_000)
        let output = file.appendingPathExtension("fetched")
        let process = Process()
        process.executableURL = try BLETool.executableURL()
        process.arguments = ["fetch", file.absoluteString, "-o", output.path, peer.address.description, "--hci", env.rootcanal]
        let progress = OutputLines()
        process.standardOutput = progress.pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        progress.startReading()
        addTeardownBlock { if process.isRunning { process.terminate() } }
        try peer.waitForEvent("fetched", timeout: 60)
        let receiving = progress.waitForLine(startingWith: "receiving", timeout: 60)
        XCTAssertNotNil(receiving, "no progress line from ble fetch; output: \(progress.all)")
        kill(peer.pid, SIGSTOP)
        var frozen = true
        defer { if frozen { kill(peer.pid, SIGCONT) } }
        kill(process.processIdentifier, SIGINT)
        guard ProcessEvents.waitForExit(process, timeout: 30) else {
            process.terminate()
            return XCTFail("ble fetch still runs 30 s after SIGINT; output: \(progress.all)")
        }
        kill(peer.pid, SIGCONT)
        frozen = false
        XCTAssertEqual(process.terminationStatus, 130, "interrupted, not finished; output: \(progress.all)")
        XCTAssertFalse(progress.all.contains { $0.hasPrefix("saved") }, "the fetch was interrupted before it finished")
        let disconnected = try peer.waitForEvent("disconnected", timeout: 10)
        XCTAssertEqual(disconnected.int("reason"), 19)
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path), "nothing is saved")
    }
}

/// A child process's standard output as lines, collected on a thread so a test can wait, with a
/// bound, for the line that marks an event.
private final class OutputLines: @unchecked Sendable {
    // @unchecked: `lines` is only touched with `condition` held.
    let pipe = Pipe()
    private let condition = NSCondition()
    private var lines: [String] = []

    /// Every line so far.
    var all: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    func startReading() {
        ProcessEvents.readLines(from: pipe.fileHandleForReading) { [self] line in
            condition.lock()
            lines.append(line)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The first line starting with `prefix`, waiting up to `timeout` seconds for it.
    func waitForLine(startingWith prefix: String, timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let line = lines.first(where: { $0.hasPrefix(prefix) }) { return line }
            if !condition.wait(until: deadline) { return nil }
        }
    }
}
