#if canImport(Glibc)
import BLERuntime
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLEHCI
import Synchronization

/// Writes a btsnoop file (format in BLEHCI/BTSnoop.swift) that Wireshark, tshark and btmon read.
///
/// Each record goes to the kernel with one `write` as soon as it is made: there is no user-space
/// buffer, so a process killed mid-run still leaves every record written so far in a readable
/// file (nothing is fsync'd: surviving a machine crash is not the point). Safe to call from
/// several tasks: a lock keeps each record contiguous and the records in call order.
public final class BTSnoopWriter: Sendable {
    public let path: String
    private let clock: @Sendable () -> Int64
    private let state: Mutex<State>

    private struct State {
        var fd: Int32
        var lastError: TransportError?
    }

    /// Creates (or truncates) `path` and writes the file header. `clock` gives Unix microseconds
    /// for each record (the real-time clock by default; tests pass a fixed one).
    public init(path: String, clock: @escaping @Sendable () -> Int64 = BTSnoopWriter.unixMicrosecondsNow) throws {
        self.path = path
        self.clock = clock
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(0o644))
        if fd < 0 {
            let e = errno
            throw TransportError(.openFailed, "cannot create btsnoop capture \(path): \(String(cString: strerror(e)))", errno: e)
        }
        self.state = Mutex(State(fd: fd, lastError: nil))
        if let error = Self.writeAll(fd, BTSnoop.fileHeader, path: path) {
            _ = Self.closeFD(fd)
            throw error
        }
    }

    deinit {
        state.withLock { s in
            if s.fd >= 0 { _ = Self.closeFD(s.fd) }
        }
    }

    /// Appends one record stamped with the clock's time now.
    public func write(_ frame: H4Frame, direction: BTSnoop.Direction) throws {
        try write(frame, direction: direction, unixMicroseconds: clock())
    }

    /// Appends one record with an explicit Unix time in microseconds.
    public func write(_ frame: H4Frame, direction: BTSnoop.Direction, unixMicroseconds: Int64) throws {
        let record = BTSnoop.record(frame: frame, direction: direction,
                                    timestamp: BTSnoop.timestamp(unixMicroseconds: unixMicroseconds))
        try state.withLock { s in
            guard s.fd >= 0 else { throw TransportError(.closed, "btsnoop capture \(path) is closed") }
            if let error = Self.writeAll(s.fd, record, path: path) {
                s.lastError = error
                throw error
            }
        }
    }

    /// The last write error, if any (`CapturingTransport` keeps going when a capture write fails).
    public var lastError: TransportError? { state.withLock { $0.lastError } }

    /// Closes the file; later writes throw `.closed`. Idempotent.
    public func close() {
        state.withLock { s in
            if s.fd >= 0 { _ = Self.closeFD(s.fd) }
            s.fd = -1
        }
    }

    private static func closeFD(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        return Glibc.close(fd)
        #else
        return Darwin.close(fd)
        #endif
    }

    public static func unixMicrosecondsNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) -> TransportError? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                #if canImport(Glibc)
                return Glibc.write(fd, base + offset, raw.count - offset)
                #else
                return Darwin.write(fd, base + offset, raw.count - offset)
                #endif
            }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                let e = errno
                return TransportError(.io, "writing btsnoop capture \(path) failed: \(String(cString: strerror(e)))", errno: e)
            }
        }
        return nil
    }
}

/// Passes frames through to `inner` unchanged and records each one, both ways, in a btsnoop
/// file. Sent frames are recorded just before they are written, so a command always precedes its
/// Command Complete in the capture. A failing capture write never fails the link; see
/// `BTSnoopWriter.lastError`.
public final class CapturingTransport: HCITransport {
    public let inner: any HCITransport
    public let sink: BTSnoopWriter
    public let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let forwarder: Task<Void, Never>

    public init(wrapping inner: any HCITransport, sink: BTSnoopWriter) {
        self.inner = inner
        self.sink = sink
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        incoming = stream
        forwarder = Task {
            do {
                for try await frame in inner.incoming {
                    try? sink.write(frame, direction: .received)
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { [forwarder] reason in
            if case .cancelled = reason { forwarder.cancel() }
        }
    }

    public func send(_ frame: H4Frame) async throws {
        try? sink.write(frame, direction: .sent)
        try await inner.send(frame)
    }

    /// Closes the wrapped transport and waits until every received frame is recorded. The
    /// writer stays open (it may be shared); close it separately.
    public func close() async {
        await inner.close()
        await forwarder.value
    }

    public var description: String { "\(inner.description) (capturing to \(sink.path))" }
}
