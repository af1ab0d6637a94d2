import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `ble bench` against bumble-bench over rootcanal, both ways: each side run with the same
/// options as the other tool takes them, bumble-bench's default addresses, small packet counts.
/// Nothing is timed here: a run passes when both sides end cleanly and each prints what its
/// scenario ends with (the receiver's last packet, the sender's ACK, the pinger's RTTs).
///
/// bumble-bench runs through scripts/lib/bumble_bench.py, which adds the `can_receive` its
/// 0.0.236 GATT classes lack (without it a GATT sender dies before its queue has drained).
final class BenchInteropTests: XCTestCase {
    enum Tool { case swift, bumble }

    /// One bench process, its stdout and stderr collected as lines (colours stripped).
    final class BenchProcess: @unchecked Sendable {
        let name: String
        private let process = Process()
        private let lock = NSCondition()
        private var lines: [String] = []
        private var openStreams = 2

        init(_ tool: Tool, role: String, options: [String], env: InteropEnvironment) throws {
            let (before, after) = Self.split(options)
            switch tool {
            case .swift:
                name = "ble bench \(role)"
                process.executableURL = try BLETool.executableURL()
                process.arguments = ["bench"] + before + [role, "--hci", env.rootcanal] + after
            case .bumble:
                name = "bumble-bench \(role)"
                process.executableURL = env.python
                let script = InteropEnvironment.repositoryRoot.appendingPathComponent("scripts/lib/bumble_bench.py").path
                process.arguments = [script] + before + [role, env.bumbleTransport] + after
            }
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
            for handle in [out.fileHandleForReading, err.fileHandleForReading] {
                ProcessEvents.readLines(from: handle) { [weak self] in self?.received($0) } ended: { [weak self] in self?.closed() }
            }
        }

        deinit { stop() }

        /// bumble-bench takes the connection's options after the role, the rest before it.
        static func split(_ options: [String]) -> ([String], [String]) {
            var before: [String] = [], after: [String] = []
            var i = 0
            while i < options.count {
                if ["--peripheral", "--connection-interval", "--ci", "--phy"].contains(options[i]), i + 1 < options.count {
                    after += [options[i], options[i + 1]]
                    i += 2
                } else {
                    before.append(options[i])
                    i += 1
                }
            }
            return (before, after)
        }

        private func received(_ line: String) {
            let plain = line.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
            lock.lock()
            lines.append(plain)
            lock.broadcast()
            lock.unlock()
        }

        private func closed() {
            lock.lock()
            openStreams -= 1
            lock.broadcast()
            lock.unlock()
        }

        var output: [String] {
            lock.lock()
            defer { lock.unlock() }
            return lines
        }

        /// Waits until a line contains `text` (at most `timeout` seconds of real time, a bound only).
        func waitFor(_ text: String, timeout: TimeInterval = 30) throws {
            let deadline = Date().addingTimeInterval(timeout)
            lock.lock()
            defer { lock.unlock() }
            while !lines.contains(where: { $0.contains(text) }) {
                if openStreams == 0 { throw ServeError("\(name) ended before printing \(text):\n\(lines.suffix(20).joined(separator: "\n"))") }
                if !lock.wait(until: deadline) { throw ServeError("\(name) printed no \(text) in \(timeout) s:\n\(lines.suffix(20).joined(separator: "\n"))") }
            }
        }

        /// Waits for the exit (at most `timeout` s, then it is killed); the status, nil when killed.
        func waitForExit(timeout: TimeInterval = 60) -> Int32? {
            if ProcessEvents.waitForExit(process, timeout: timeout) { return process.terminationStatus }
            stop()
            return nil
        }

        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            if !ProcessEvents.waitForExit(process, timeout: 5) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Runs a peripheral with `peripheralOptions` and, once it advertises, a central with
    /// `centralOptions`; waits for both to end and returns their lines.
    func pair(central: Tool, _ centralOptions: [String], peripheral: Tool, _ peripheralOptions: [String],
              file: StaticString = #filePath, line: UInt = #line) throws -> (central: [String], peripheral: [String]) {
        let env = try InteropEnvironment.current()
        let p = try BenchProcess(peripheral, role: "peripheral", options: peripheralOptions, env: env)
        addTeardownBlock { p.stop() }
        try p.waitFor("Waiting for connection")
        let c = try BenchProcess(central, role: "central", options: centralOptions + ["--start-delay", "0"], env: env)
        addTeardownBlock { c.stop() }
        let centralStatus = c.waitForExit()
        let peripheralStatus = p.waitForExit(timeout: 30)
        let (cLines, pLines) = (c.output, p.output)
        let both = "central:\n\(cLines.suffix(25).joined(separator: "\n"))\nperipheral:\n\(pLines.suffix(25).joined(separator: "\n"))"
        XCTAssertEqual(centralStatus, 0, "\(c.name) ends cleanly\n\(both)", file: file, line: line)
        XCTAssertEqual(peripheralStatus, 0, "\(p.name) ends cleanly\n\(both)", file: file, line: line)
        for (name, lines) in [(c.name, cLines), (p.name, pLines)] {
            // Up to the run's end: bumble-bench 0.0.236 may log a traceback while it tears down after
            // "Done!" when the link goes at the same moment (a disconnect crossing its exit).
            let run = lines.prefix(lines.lastIndex { $0.contains("Done!") }.map { $0 + 1 } ?? lines.count)
            XCTAssertFalse(run.contains { $0.contains("!!! Unexpected packet") || $0.contains("Invalid packet") || $0.contains("Traceback") },
                           "\(name) saw every packet in order\n\(both)", file: file, line: line)
        }
        return (cLines, pLines)
    }

    func assertContains(_ lines: [String], _ text: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(lines.contains { $0.contains(text) }, "\(what): no \"\(text)\" in\n\(lines.suffix(25).joined(separator: "\n"))", file: file, line: line)
    }

    /// 30 packets of 200 bytes (900 on L2CAP, where several K-frames make one packet).
    static let count = ["--packet-count", "30", "--packet-size", "200"]
    static let l2capCount = ["--packet-count", "30", "--packet-size", "900"]

    // MARK: GATT send / receive

    func testSwiftCentralSendsToBumbleGATTServer() throws {
        let (c, p) = try pair(central: .swift, Self.count, peripheral: .bumble, [])
        assertContains(c, "@@@ Received ACK. Speed: average=", "ble's sender reports the throughput")
        assertContains(p, "@@@ Received last packet", "Bumble's receiver got the whole run")
        assertContains(p, "<<< Received packet 29: flags=1", "the last packet is 29 and flagged")
    }

    func testBumbleCentralSendsToSwiftGATTServer() throws {
        let (c, p) = try pair(central: .bumble, Self.count, peripheral: .swift, [])
        assertContains(c, "@@@ Received ACK. Speed: average=", "Bumble's sender got our ACK")
        assertContains(p, "<<< Received packet 29: flags=1, jitter=", "ble's receiver got the last packet")
        assertContains(p, "@@@ Received last packet", "ble's receiver")
        assertContains(p, "Speed: instant=", "ble's receiver reports the speed")
    }

    // MARK: GATT ping / pong

    func testSwiftCentralPingsBumbleGATTServer() throws {
        let (c, p) = try pair(central: .swift, Self.count + ["--scenario", "ping"], peripheral: .bumble, ["--scenario", "pong"])
        assertContains(c, "<<< Received ACK [29], RTT=", "ble's ping has every ACK")
        assertContains(c, "@@@ RTTs: min=", "ble's ping reports the RTTs")
        assertContains(p, "<<< Received packet 29", "Bumble's pong")
    }

    func testBumbleCentralPingsSwiftGATTServer() throws {
        let (c, p) = try pair(central: .bumble, Self.count + ["--scenario", "ping"], peripheral: .swift, ["--scenario", "pong"])
        assertContains(c, "@@@ RTTs: min=", "Bumble's ping got our ACKs")
        assertContains(p, "<<< Received packet 29: flags=1", "ble's pong")
    }

    // MARK: L2CAP send / receive

    func testSwiftCentralSendsToBumbleL2CAPServer() throws {
        let (c, p) = try pair(central: .swift, Self.l2capCount + ["--mode", "l2cap-client"],
                              peripheral: .bumble, ["--mode", "l2cap-server"])
        assertContains(c, "@@@ Received ACK. Speed: average=", "ble's sender")
        assertContains(p, "@@@ Received last packet", "Bumble's receiver")
        assertContains(p, "900 bytes", "each packet is --packet-size on the stream, length included")
    }

    func testBumbleCentralSendsToSwiftL2CAPServer() throws {
        let (c, p) = try pair(central: .bumble, Self.l2capCount + ["--mode", "l2cap-client"],
                              peripheral: .swift, ["--mode", "l2cap-server"])
        assertContains(c, "@@@ Received ACK. Speed: average=", "Bumble's sender")
        assertContains(p, "<<< Received packet 29: flags=1, jitter=", "ble's receiver")
        assertContains(p, ", 900 bytes", "the stream's packets are read back whole")
    }

    // MARK: L2CAP ping / pong

    func testSwiftCentralPingsBumbleL2CAPServer() throws {
        let (c, _) = try pair(central: .swift, Self.l2capCount + ["--mode", "l2cap-client", "--scenario", "ping"],
                              peripheral: .bumble, ["--mode", "l2cap-server", "--scenario", "pong"])
        assertContains(c, "@@@ RTTs: min=", "ble's ping over L2CAP")
    }

    func testBumbleCentralPingsSwiftL2CAPServer() throws {
        let (c, p) = try pair(central: .bumble, Self.l2capCount + ["--mode", "l2cap-client", "--scenario", "ping"],
                              peripheral: .swift, ["--mode", "l2cap-server", "--scenario", "pong"])
        assertContains(c, "@@@ RTTs: min=", "Bumble's ping over L2CAP")
        assertContains(p, "<<< Received packet 29: flags=1", "ble's pong")
    }
}
