#if canImport(Glibc)
import BLERuntime
import Glibc
#endif
import Foundation
import XCTest
import BLEHCI
@testable import BLETransport

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing with `TestTimeout` if it takes longer than `seconds`.
func withTimeout<T: Sendable>(_ seconds: Double = 5, _ what: String = "result",
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            throw TestTimeout(what: what)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TestTimeout(what: what) }
        return first
    }
}

/// Takes the next `count` frames from a transport's stream (with a timeout).
func nextFrames(_ transport: any HCITransport, _ count: Int, timeout: Double = 5) async throws -> [H4Frame] {
    let stream = transport.incoming
    return try await withTimeout(timeout, "\(count) frames from \(transport.description)") {
        var frames: [H4Frame] = []
        var it = stream.makeAsyncIterator()
        while frames.count < count, let f = try await it.next() { frames.append(f) }
        return frames
    }
}

/// How a transport's stream ended: nil for a normal finish, or the error it threw. Fails the
/// test if a frame arrives instead.
func streamEnding(_ transport: any HCITransport, timeout: Double = 5) async throws -> TransportError? {
    let stream = transport.incoming
    return try await withTimeout(timeout, "end of \(transport.description)") { () -> TransportError? in
        do {
            for try await f in stream { XCTFail("unexpected frame \(f)") }
            return nil
        } catch let e as TransportError {
            return e
        }
    }
}

/// Sample frames used by several tests.
enum Sample {
    /// HCI_Reset (OGF 0x03, OCF 0x0003), Core spec Vol 4 Part E §7.3.2.
    static let reset = H4Frame(type: .command, payload: [0x03, 0x0C, 0x00])
    /// Command Complete for HCI_Reset, Num_HCI_Command_Packets 1, status success.
    static let resetComplete = H4Frame(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    /// LE Advertising Report: one ADV_IND from public 66:55:44:33:22:11 with Flags and the
    /// complete local name "Test", RSSI -56. Core spec Vol 4 Part E §7.7.65.2.
    static let advertisingReport = H4Frame(type: .event, payload: [
        0x3E, 0x15, 0x02, 0x01, 0x00, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
        0x09, 0x02, 0x01, 0x06, 0x05, 0x09, 0x54, 0x65, 0x73, 0x74, 0xC8,
    ])
    /// ACL on handle 0x0040 (first automatically flushable fragment) carrying L2CAP CID 0x0004
    /// with an ATT Read Request for handle 0x0003.
    static let attReadRequest = H4Frame(type: .acl, payload: [
        0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00,
    ])
    static let all = [reset, resetComplete, advertisingReport, attReadRequest]
}

/// Unique temp path for this test run.
func tempPath(_ name: String) -> String {
    NSTemporaryDirectory() + "bletransport-\(getpid())-\(UUID().uuidString.prefix(8))-\(name)"
}

/// PATH lookup for an external tool; nil when absent (the test then skips).
func findExecutable(_ name: String) -> String? {
    let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    for dir in dirs + ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let p = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// Runs a tool to completion; returns (status, stdout, stderr).
func runTool(_ path: String, _ arguments: [String]) throws -> (Int32, String, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

#if canImport(Glibc)
/// Blocking-socket helpers for the in-test peer. Blocking calls are fine in tests as long as each
/// one has data waiting or a poll timeout first.
enum Peer {
    /// A TCP socket listening on 127.0.0.1 at a kernel-chosen port.
    static func listen() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestTimeout(what: "socket") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 8) == 0 else { throw TestTimeout(what: "bind/listen") }
        return (fd, boundPort(fd))
    }

    static func boundPort(_ fd: Int32) -> UInt16 {
        var addr = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Accepts one connection, waiting at most `timeout` seconds.
    static func accept(_ listener: Int32, timeout: Double = 5) throws -> Int32 {
        guard waitReadable(listener, timeout: timeout) else { throw TestTimeout(what: "accept") }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw TestTimeout(what: "accept failed errno \(errno)") }
        return fd
    }

    static func waitReadable(_ fd: Int32, timeout: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, Int32(timeout * 1000)) > 0
    }

    /// Waits until the reader of the socket `fd` has taken every byte the kernel holds for it
    /// (FIONREAD 0), or `timeout` passes; false then. Bytes not yet delivered to `fd` when this
    /// is called do not count.
    static func waitTakenByReader(_ fd: Int32, timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var pending: Int32 = 0
        while ioctl(fd, UInt(FIONREAD), &pending) == 0, pending > 0 {
            if Date() >= deadline { return false }
            sched_yield()
        }
        return pending == 0
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, bytes.count - off) }
            if n <= 0 { XCTFail("peer write failed errno \(errno)"); return }
            off += n
        }
    }

    /// Reads exactly `count` bytes (or fails after `timeout`).
    static func read(_ fd: Int32, _ count: Int, timeout: Double = 5) throws -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while out.count < count {
            guard waitReadable(fd, timeout: timeout) else { throw TestTimeout(what: "\(count) bytes (got \(out.count))") }
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, min(4096, count - out.count)) }
            guard n > 0 else { throw TestTimeout(what: "\(count) bytes, read returned \(n) errno \(errno)") }
            out += buf[0..<n]
        }
        return out
    }

    /// Blocking work off the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async { c.resume(with: Result { try body() }) }
        }
    }
}
#endif
