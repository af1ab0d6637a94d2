#if canImport(Glibc)
import Synchronization
import BLERuntime
import Glibc
import Dispatch
import Foundation
import BLEHCI

/// The machinery shared by every file-descriptor transport (TCP, UART, HCI user channel): one
/// dedicated reader thread, one serial write queue, and an orderly shutdown.
///
/// Why this shape:
/// - Reads block, and the Swift concurrency pool has as many threads as cores (2 here): a read
///   parked on it would starve the stack. The reader is its own `Thread`; writes run on a serial
///   `DispatchQueue`, which also gives the "one frame at a time, in call order" guarantee.
/// - The descriptor is non-blocking and every wait is a `poll` on it *and* a wake pipe. `close()`
///   writes the pipe; the reader and any write stuck on a full socket or a flow-controlled UART
///   return at once. (Closing the fd under a blocked reader does not wake it on Linux, and would
///   race with fd reuse.)
/// - Only the write queue closes the descriptor, after the reader has exited and after the write
///   in progress, so no syscall ever sees a closed or reused fd number.
final class DescriptorPump<Element: Sendable>: Sendable {
    typealias Framing = PumpFraming<Element>

    let fd: Int32
    let name: String
    let incoming: AsyncThrowingStream<Element, any Error>

    private let framing: Framing
    private let isSocket: Bool
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let continuation: AsyncThrowingStream<Element, any Error>.Continuation
    private let writeQueue: DispatchQueue
    private let state = Mutex(State())

    private struct State {
        /// Set by `close()`, or by the reader when it stops on its own; no new write starts after.
        var closing = false
        var closedByUser = false
        /// The fds are closed (or about to be): nobody may touch them any more.
        var released = false
        /// `incoming` has finished; `close()` callers may return.
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Takes ownership of `fd` (closed on failure too) and starts the reader thread.
    init(fd: Int32, name: String, framing: Framing, isSocket: Bool) throws {
        if let e = POSIX.setNonBlocking(fd) {
            POSIX.closeIgnoringErrors(fd)
            throw TransportError(.openFailed, "\(name): cannot make the descriptor non-blocking: \(POSIX.errorText(e))", errno: e)
        }
        guard let wake = POSIX.makeWakePipe() else {
            let e = errno
            POSIX.closeIgnoringErrors(fd)
            throw TransportError(.openFailed, "\(name): cannot create a pipe: \(POSIX.errorText(e))", errno: e)
        }
        self.fd = fd
        self.name = name
        self.framing = framing
        self.isSocket = isSocket
        self.wakeRead = wake.read
        self.wakeWrite = wake.write
        self.writeQueue = DispatchQueue(label: "BLETransport.write \(name)")
        (incoming, continuation) = AsyncThrowingStream.makeStream(of: Element.self, throwing: (any Error).self)
        continuation.onTermination = { [weak self] reason in
            // The consumer stopped listening (cancelled its task): nobody will read again, so
            // stop the reader instead of buffering forever.
            if case .cancelled = reason { self?.requestClose(byUser: true) }
        }
        let thread = Thread { [self] in self.readLoop() }
        thread.name = "BLETransport.read \(name)"
        thread.start()
    }

    // MARK: Writing

    func send(_ bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            writeQueue.async { [self] in
                if state.withLock({ $0.closing }) {
                    c.resume(throwing: TransportError(.closed, "\(name): transport is closed"))
                    return
                }
                do {
                    try writeAll(bytes)
                    c.resume()
                } catch {
                    c.resume(throwing: error)
                }
            }
        }
    }

    /// Runs on `writeQueue`. Loops over partial writes; waits for POLLOUT or the wake pipe.
    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                let p = base + offset
                let count = raw.count - offset
                // MSG_NOSIGNAL: a write to a socket the peer closed must be an EPIPE error, not a
                // SIGPIPE that kills the process.
                return isSocket ? Glibc.send(fd, p, count, Int32(MSG_NOSIGNAL)) : Glibc.write(fd, p, count)
            }
            if n > 0 {
                offset += n
                continue
            }
            let e = errno
            if n < 0 && e == EINTR { continue }
            if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) {
                if try waitReady(events: Int16(POLLOUT)) { continue }
                throw TransportError(.closed, "\(name): transport closed during a write")
            }
            if e == EPIPE || e == ECONNRESET {
                throw TransportError(.peerClosed, "\(name): the peer closed the connection (write: \(POSIX.errorText(e)))", errno: e)
            }
            throw TransportError(.io, "\(name): write failed: \(POSIX.errorText(e))", errno: e)
        }
    }

    /// Polls `fd` for `events` together with the wake pipe. Returns false when woken for close.
    private func waitReady(events: Int16) throws -> Bool {
        while true {
            var fds = [pollfd(fd: fd, events: events, revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, -1)
            if r < 0 {
                let e = errno
                if e == EINTR { continue }
                throw TransportError(.io, "\(name): poll failed: \(POSIX.errorText(e))", errno: e)
            }
            if fds[1].revents != 0 { return false }
            if fds[0].revents & Int16(POLLNVAL) != 0 {
                throw TransportError(.io, "\(name): descriptor became invalid")
            }
            if fds[0].revents != 0 { return true }
        }
    }

    // MARK: Reading

    /// Runs on the dedicated reader thread until close, EOF, an error or a lost sync. The
    /// buffer is 64 KiB + header: larger than any HCI packet (ACL length is 16 bits), so one
    /// datagram read never truncates a user-channel packet.
    private func readLoop() {
        let decode = framing.makeDecoder(name)
        var buffer = [UInt8](repeating: 0, count: 65_544)
        var failure: TransportError?
        reading: while true {
            do {
                guard try waitReady(events: Int16(POLLIN)) else { break reading }
            } catch let error as TransportError {
                failure = error
                break reading
            } catch {
                failure = TransportError(.io, "\(name): \(error)")
                break reading
            }
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.read(fd, base, raw.count)
            }
            if n < 0 {
                let e = errno
                if e == EINTR || e == EAGAIN || e == EWOULDBLOCK { continue }
                if e == ECONNRESET || e == EIO || e == ENODEV || e == ENXIO || e == ENETDOWN {
                    // EIO: a pty master closed or a USB serial adapter was unplugged;
                    // ENODEV/ENETDOWN: the HCI adapter went away.
                    failure = TransportError(.peerClosed, "\(name): the connection or device went away (read: \(POSIX.errorText(e)))", errno: e)
                } else {
                    failure = TransportError(.io, "\(name): read failed: \(POSIX.errorText(e))", errno: e)
                }
                break reading
            }
            if n == 0 {
                failure = TransportError(.peerClosed, "\(name): the peer closed the connection")
                break reading
            }
            var elements: [Element] = []
            do {
                try decode(Array(buffer[0..<n]), &elements)
                for element in elements { continuation.yield(element) }
            } catch {
                // What completed before the bad byte is still delivered, in order.
                for element in elements { continuation.yield(element) }
                failure = error as? TransportError ?? TransportError(.desync, "\(name): \(error)")
                break reading
            }
        }
        finish(failure)
    }

    /// The reader's exit path: make sure no write starts or stays parked, close the fds on the
    /// write queue, then finish the stream and release everyone waiting in `close()`.
    private func finish(_ failure: TransportError?) {
        requestClose(byUser: false)
        writeQueue.sync {
            state.withLock { $0.released = true }
            POSIX.closeIgnoringErrors(fd)
            POSIX.closeIgnoringErrors(wakeRead)
            POSIX.closeIgnoringErrors(wakeWrite)
        }
        if state.withLock({ $0.closedByUser }) || failure == nil {
            continuation.finish()
        } else {
            continuation.finish(throwing: failure)
        }
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.finished = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    // MARK: Closing

    /// Marks the pump closing and wakes the reader and any parked write. The wake write happens
    /// under the lock, before `released` can be set, so it never hits a closed fd. Also called
    /// from the transports' deinit, so a transport dropped without `close()` still stops its
    /// reader thread and closes its descriptor.
    func requestClose(byUser: Bool) {
        state.withLock { s in
            if s.released || s.closing { return }
            s.closing = true
            s.closedByUser = byUser
            var one: UInt8 = 1
            _ = Glibc.write(wakeWrite, &one, 1)
        }
    }

    /// Idempotent; returns once the descriptor is closed and `incoming` finished.
    func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.finished { return true }
                s.waiters.append(c)
                return false
            }
            if done {
                c.resume()
            } else {
                requestClose(byUser: true)
            }
        }
    }
}
/// How a pump turns what it reads into elements: H4 frames from a byte stream (TCP, UART) or
/// from datagrams (the HCI user channel), or the bytes as they came (HTTP over TCP).
struct PumpFraming<Element: Sendable>: Sendable {
    /// Makes the decoder of one pump (it lives on the reader thread): it takes each chunk read
    /// and appends the elements it completes; throwing ends the pump with that error.
    let makeDecoder: @Sendable (_ name: String) -> ([UInt8], inout [Element]) throws -> Void
}

extension PumpFraming where Element == H4Frame {
    /// A byte stream (TCP, UART): split into frames by `H4StreamDecoder`.
    static var stream: PumpFraming<H4Frame> {
        PumpFraming { name in
            var decoder = H4StreamDecoder()
            return { chunk, frames in
                do { try decoder.push(chunk, into: &frames) } catch {
                    throw TransportError(.desync, "\(name): lost H4 framing (\(error)); closing the transport")
                }
            }
        }
    }

    /// One packet per read, indicator included (HCI user channel socket). An unknown indicator
    /// in a whole packet desyncs nothing: it is skipped.
    static var datagram: PumpFraming<H4Frame> {
        PumpFraming { _ in { chunk, frames in if let frame = try? H4Frame(bytes: chunk) { frames.append(frame) } } }
    }
}

extension PumpFraming where Element == [UInt8] {
    /// The bytes as read, one chunk per read.
    static var bytes: PumpFraming<[UInt8]> {
        PumpFraming { _ in { chunk, out in out.append(chunk) } }
    }
}
#endif
