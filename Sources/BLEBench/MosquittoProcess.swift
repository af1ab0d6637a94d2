#if canImport(Glibc)
import Glibc
#endif
import BLEMQTT
import Foundation

/// A `mosquitto` broker of `ble-bench gateway`'s own: started on a free loopback port with a
/// configuration in a temporary directory, its CPU time read from `/proc/PID/stat`, and stopped
/// by its process identifier (SIGTERM, then SIGKILL if it lingers).
final class MosquittoProcess: @unchecked Sendable {
    // @unchecked: `process` is only used from the task that runs the bench (start, cpu, stop).
    /// Where the broker is run from: `BLE_MOSQUITTO`, or Debian's package's path.
    static var executable: String {
        ProcessInfo.processInfo.environment["BLE_MOSQUITTO"] ?? "/usr/sbin/mosquitto"
    }

    let url: MQTTBrokerURL
    let pid: Int32
    let version: String
    private let process: Process
    private let directory: URL

    /// Starts the broker and waits (at most 5 s) until it takes connections. Throws a
    /// `GatewayBenchError.failed` saying what to do when the executable is missing or it exits.
    init() throws {
        let path = Self.executable
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw GatewayBenchError.failed("""
            no mosquitto at \(path): install it (apt-get install mosquitto), set BLE_MOSQUITTO to its path, \
            or give a running broker with --broker mqtt://HOST:PORT
            """)
        }
        let port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bench-mosquitto-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = directory.appendingPathComponent("mosquitto.conf")
        let log = directory.appendingPathComponent("mosquitto.log")
        // Loopback only, no persistence, no log; QoS 1 messages for a slow subscriber queued up
        // to 100,000 (the default 1,000 would drop a second's burst of several gateways).
        try """
        listener \(port) 127.0.0.1
        allow_anonymous true
        persistence false
        max_queued_messages 100000
        log_dest stderr
        log_type error
        log_type warning

        """.write(to: configuration, atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw GatewayBenchError.failed("cannot create \(log.path)")
        }
        let output = try FileHandle(forWritingTo: log)
        process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-c", configuration.path]
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw GatewayBenchError.failed("cannot start \(path): \(error)")
        }
        pid = process.processIdentifier
        url = MQTTBrokerURL(host: "127.0.0.1", port: port, usesTLS: false)
        version = Self.version(of: path)
        let deadline = monotonicSeconds() + 5
        while !Self.acceptsConnections(port: port) {
            let said = (try? String(contentsOf: log, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            guard process.isRunning else {
                throw GatewayBenchError.failed("mosquitto exited at start (status \(process.terminationStatus))\(said.isEmpty ? "" : ": \(said)")")
            }
            guard monotonicSeconds() < deadline else {
                stop()
                throw GatewayBenchError.failed("mosquitto took no connection on port \(port) within 5 s\(said.isEmpty ? "" : ": \(said)")")
            }
            usleep(20_000)
        }
    }

    /// The broker's CPU time so far (user and system), in seconds.
    func cpuSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm) ": state is field 3, utime field 14, stime field 15 (proc(5)).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Stops the broker by its PID and removes its directory.
    func stop() {
        if process.isRunning {
            kill(pid, SIGTERM)
            let deadline = monotonicSeconds() + 3
            while process.isRunning && monotonicSeconds() < deadline { usleep(10_000) }
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A port on 127.0.0.1 nobody listens on: the one the kernel picks for port 0.
    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw GatewayBenchError.failed("cannot make a socket to find a free port (errno \(errno))") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw GatewayBenchError.failed("cannot bind a loopback socket to find a free port (errno \(errno))") }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func acceptsConnections(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return a
    }

    /// The first line of `mosquitto -h` ("mosquitto version 2.0.11"), or "mosquitto".
    private static func version(of path: String) -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = ["-h"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return "mosquitto" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let first = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        return first.hasPrefix("mosquitto version") ? first : "mosquitto"
    }
}
