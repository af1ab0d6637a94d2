#if canImport(Glibc)
import BLERuntime
import Glibc
import Dispatch
import BLEHCI

/// H4 over TCP: the transport of virtual controllers (rootcanal's `-hci_port`, Bumble's
/// `tcp-server`, Zephyr native_sim). The byte stream is the UART's, so framing is
/// `H4StreamDecoder`'s; an unknown indicator ends the transport with `.desync`.
public final class TCPTransport: HCITransport {
    public let host: String
    public let port: UInt16
    let pump: DescriptorPump<H4Frame>

    private init(host: String, port: UInt16, fd: Int32) throws {
        self.host = host
        self.port = port
        self.pump = try DescriptorPump(fd: fd, name: TransportSpec.tcp(host: host, port: port).description,
                                       framing: .stream, isSocket: true)
    }

    /// Resolves `host` (getaddrinfo: IPv4, IPv6 or a name), connects to the first address that
    /// accepts, and sets TCP_NODELAY so each HCI command leaves at once instead of waiting for
    /// Nagle's timer. Resolution and the blocking connect run on a Dispatch thread, not on the
    /// Swift concurrency pool.
    public static func connect(host: String, port: UInt16) async throws -> TCPTransport {
        let fd: Int32 = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                c.resume(with: Result { try connectSocket(host: host, port: port) })
            }
        }
        return try TCPTransport(host: host, port: port, fd: fd)
    }

    deinit { pump.requestClose(byUser: true) }

    public var incoming: AsyncThrowingStream<H4Frame, any Error> { pump.incoming }
    public func send(_ frame: H4Frame) async throws { try await pump.send(frame.bytes) }
    public func close() async { await pump.close() }
    public var description: String { pump.name }

    private static func connectSocket(host: String, port: UInt16) throws -> Int32 {
        let target = TransportSpec.tcp(host: host, port: port).description
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 {
            let why = rc == EAI_SYSTEM ? POSIX.errorText(errno) : String(cString: gai_strerror(rc))
            throw TransportError(.openFailed, "\(target): cannot resolve host '\(host)': \(why)")
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = ECONNREFUSED
        var cursor = list
        while let ai = cursor {
            cursor = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                            ai.pointee.ai_protocol)
            if fd < 0 {
                lastErrno = errno
                continue
            }
            var r: Int32
            repeat {
                r = Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen)
            } while r < 0 && errno == EINTR
            if r == 0 {
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            lastErrno = errno
            POSIX.closeIgnoringErrors(fd)
        }
        switch lastErrno {
        case ECONNREFUSED:
            throw TransportError(.openFailed,
                "\(target): connection refused: nothing is listening on \(host):\(port) (is the controller, e.g. rootcanal -hci_port=\(port), running?)",
                errno: lastErrno)
        case ETIMEDOUT:
            throw TransportError(.openFailed, "\(target): connection to \(host):\(port) timed out", errno: lastErrno)
        case ENETUNREACH, EHOSTUNREACH:
            throw TransportError(.openFailed, "\(target): \(host):\(port) is unreachable: \(POSIX.errorText(lastErrno))", errno: lastErrno)
        default:
            throw TransportError(.openFailed, "\(target): cannot connect to \(host):\(port): \(POSIX.errorText(lastErrno))", errno: lastErrno)
        }
    }
}
#endif
