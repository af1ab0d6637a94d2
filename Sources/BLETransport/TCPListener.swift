#if canImport(Glibc)
import Synchronization
import BLERuntime
import Glibc
import Dispatch
import Foundation
import BLEHCI

/// A listening TCP socket that hands out one `Connection` per peer that connects: H4 for the
/// controller side of `ble radio --listen` (`TCPListener`, one `HCITransport` per host, as
/// rootcanal's `-hci_port` does), or a byte stream for `ble ui` (`TCPServer<TCPByteConnection>`).
///
/// Why this shape:
/// - `accept` blocks, so it runs on its own `Thread` (not the 2-thread cooperative pool), and
///   waits in `poll` on the listening socket *and* a wake pipe, so `close()` stops it at once
///   (closing a socket under a blocked `accept` does not wake it on Linux).
/// - Each accepted socket becomes a `TCPHostConnection` built on the same `DescriptorPump` the
///   host-side transports use: the H4 framing is symmetric (Core spec Vol 4 Part A §2), only the
///   direction differs. Its `incoming` are the frames the *host* sends (commands, ACL data), and
///   `send` writes what a controller sends (events, ACL data).
public final class TCPServer<Connection: TCPAcceptedConnection>: Sendable {
    /// The address and port actually bound (the kernel's choice when asked for port 0).
    public let host: String
    public let port: UInt16
    /// Every peer that connects, in accept order. Finishes after `close()` or a fatal accept error.
    public let connections: AsyncStream<Connection>

    private let fd: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let continuation: AsyncStream<Connection>.Continuation
    private let state = Mutex(State())

    private struct State {
        var closing = false
        var finished = false
        var clients: [Connection] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Binds `host:port` (a numeric address or a name; port 0 picks a free one), listens, and
    /// starts the accept thread. SO_REUSEADDR so a restarted radio can rebind at once.
    public static func listen(host: String, port: UInt16, backlog: Int32 = 16) throws -> TCPServer<Connection> {
        let (fd, boundPort) = try bindSocket(host: host, port: port, backlog: backlog)
        guard let wake = POSIX.makeWakePipe() else {
            let e = errno
            POSIX.closeIgnoringErrors(fd)
            throw TransportError(.openFailed, "listen on \(host):\(port): cannot create a pipe: \(POSIX.errorText(e))", errno: e)
        }
        return TCPServer(fd: fd, host: host, port: boundPort, wake: wake)
    }

    private init(fd: Int32, host: String, port: UInt16, wake: (read: Int32, write: Int32)) {
        self.fd = fd
        self.host = host
        self.port = port
        self.wakeRead = wake.read
        self.wakeWrite = wake.write
        (connections, continuation) = AsyncStream.makeStream(of: Connection.self)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "BLETransport.accept \(host):\(port)"
        thread.start()
    }

    deinit { requestClose() }

    /// The listening address as a transport spec, e.g. "tcp:127.0.0.1:6402".
    public var description: String { TransportSpec.tcp(host: host, port: port).description }

    /// Stops accepting, closes the listening socket and every connection accepted so far.
    /// Idempotent; returns once the accept thread has exited and every client is closed.
    public func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.finished { return true }
                s.waiters.append(c)
                return false
            }
            if done { c.resume() } else { requestClose() }
        }
        let clients = state.withLock { s -> [Connection] in
            defer { s.clients = [] }
            return s.clients
        }
        for client in clients { await client.close() }
    }

    private func requestClose() {
        state.withLock { s in
            if s.closing { return }
            s.closing = true
            var one: UInt8 = 1
            _ = Glibc.write(wakeWrite, &one, 1)
        }
    }

    // MARK: Accepting

    private func acceptLoop() {
        accepting: while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, -1)
            if r < 0 {
                if errno == EINTR { continue }
                break accepting
            }
            if fds[1].revents != 0 { break accepting }
            if fds[0].revents & Int16(POLLNVAL | POLLERR) != 0 { break accepting }
            guard fds[0].revents != 0 else { continue }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &length) }
            }
            if client < 0 {
                switch errno {
                // Transient: a client that reset before we accepted it, a signal, or no fds left
                // for a moment (EMFILE would spin; back off briefly instead).
                case EINTR, EAGAIN, EWOULDBLOCK, ECONNABORTED, EPROTO: continue accepting
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    usleep(100_000)
                    continue accepting
                default: break accepting
                }
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            _ = setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let peer = Self.describe(&address)
            do {
                let connection = try Connection(fd: client, peer: peer, listener: description)
                let accepted = state.withLock { s -> Bool in
                    if s.closing { return false }
                    s.clients.removeAll { $0.isFinished }
                    s.clients.append(connection)
                    return true
                }
                if accepted {
                    continuation.yield(connection)
                } else {
                    connection.requestClose()
                    break accepting
                }
            } catch {
                // The pump closed the fd; this one host is lost, the listener goes on.
                continue accepting
            }
        }
        POSIX.closeIgnoringErrors(fd)
        continuation.finish()
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closing = true
            s.finished = true
            POSIX.closeIgnoringErrors(wakeRead)
            POSIX.closeIgnoringErrors(wakeWrite)
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// "HOST:PORT" of a connected peer, for logs.
    private static func describe(_ address: inout sockaddr_storage) -> String {
        var hostBuffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var serviceBuffer = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, socklen_t(MemoryLayout<sockaddr_storage>.size), &hostBuffer, socklen_t(hostBuffer.count),
                            &serviceBuffer, socklen_t(serviceBuffer.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { return "?" }
        let h = String(decoding: hostBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let s = String(decoding: serviceBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    private static func bindSocket(host: String, port: UInt16, backlog: Int32) throws -> (Int32, UInt16) {
        let target = "\(host):\(port)"
        let (fd, lastErrno) = try POSIX.tcpSocket(host: host.isEmpty ? nil : host, port: port, flags: AI_NUMERICSERV | AI_PASSIVE,
                                                  context: "listen on \(target)", noAddressErrno: EADDRNOTAVAIL) { candidate, ai in
            var one: Int32 = 1
            _ = setsockopt(candidate, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(candidate, ai.ai_addr, ai.ai_addrlen) == 0, Glibc.listen(candidate, backlog) == 0 else { return false }
            if let e = POSIX.setNonBlocking(candidate) {
                POSIX.closeIgnoringErrors(candidate)
                throw TransportError(.openFailed, "listen on \(target): \(POSIX.errorText(e))", errno: e)
            }
            return true
        }
        if let fd { return (fd, boundPort(fd) ?? port) }
        let hint = lastErrno == EADDRINUSE ? " (another process is listening there; pick another port)" : ""
        throw TransportError(.openFailed, "listen on \(target): \(POSIX.errorText(lastErrno))\(hint)", errno: lastErrno)
    }

    private static func boundPort(_ fd: Int32) -> UInt16? {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &address) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &address) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        default:
            return nil
        }
    }
}

/// The H4 listener of `ble radio --listen`: a `TCPServer` of `TCPHostConnection`s.
public typealias TCPListener = TCPServer<TCPHostConnection>

/// A connection a `TCPServer` hands out: it takes ownership of the accepted socket.
public protocol TCPAcceptedConnection: Sendable {
    /// Takes `fd` (closing it on failure), accepted from `peer` ("ADDRESS:PORT") on `listener`.
    init(fd: Int32, peer: String, listener: String) throws
    /// Set once `close()` returned; the server drops such connections from its list.
    var isFinished: Bool { get }
    /// Starts closing without waiting (the server stopping).
    func requestClose()
    /// Closes and waits until the descriptor is released.
    func close() async
}

/// One host connected to a `TCPListener`, seen from the controller's side: `incoming` yields the
/// host's commands and ACL data, `send` writes events and ACL data to it. It finishes `incoming`
/// by throwing `.peerClosed` when the host disconnects, as every transport does.
public final class TCPHostConnection: HCITransport, TCPAcceptedConnection {
    /// The host's "ADDRESS:PORT".
    public let peer: String
    private let pump: DescriptorPump<H4Frame>
    private let finishedFlag = Mutex(false)

    /// Takes the accepted socket `fd` of `peer` on `listener`.
    public init(fd: Int32, peer: String, listener: String) throws {
        self.peer = peer
        self.pump = try DescriptorPump(fd: fd, name: "\(listener) <- \(peer)", framing: .stream, isSocket: true)
    }

    deinit { pump.requestClose(byUser: true) }

    public var incoming: AsyncThrowingStream<H4Frame, any Error> { pump.incoming }
    public func send(_ frame: H4Frame) async throws { try await pump.send(frame.bytes) }
    public func close() async {
        await pump.close()
        finishedFlag.withLock { $0 = true }
    }
    public var description: String { pump.name }

    /// Set once `close()` returned; the listener drops such connections from its list.
    public var isFinished: Bool { finishedFlag.withLock { $0 } }

    /// Starts closing without waiting.
    public func requestClose() { pump.requestClose(byUser: true) }
}

/// A TCP connection carrying a plain byte stream (HTTP for `ble ui`): `incoming` yields the bytes
/// as they are read and ends by throwing `.peerClosed` when the peer closes; `send` writes all of
/// its bytes, in call order.
public final class TCPByteConnection: TCPAcceptedConnection {
    /// The peer's "ADDRESS:PORT".
    public let peer: String
    private let pump: DescriptorPump<[UInt8]>
    private let finishedFlag = Mutex(false)

    /// Takes the accepted socket `fd` of `peer` on `listener`.
    public init(fd: Int32, peer: String, listener: String) throws {
        self.peer = peer
        self.pump = try DescriptorPump(fd: fd, name: "\(listener) <- \(peer)", framing: .bytes, isSocket: true)
    }

    deinit { pump.requestClose(byUser: true) }

    /// The bytes the peer sends, chunk by chunk.
    public var incoming: AsyncThrowingStream<[UInt8], any Error> { pump.incoming }
    /// Writes `bytes` (waiting while the socket is full).
    public func send(_ bytes: [UInt8]) async throws { try await pump.send(bytes) }
    /// Closes the connection; idempotent.
    public func close() async {
        await pump.close()
        finishedFlag.withLock { $0 = true }
    }
    /// Set once `close()` returned.
    public var isFinished: Bool { finishedFlag.withLock { $0 } }
    /// Starts closing without waiting.
    public func requestClose() { pump.requestClose(byUser: true) }
}
#endif
