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
        let (fd, lastErrno) = try POSIX.tcpSocket(host: host, port: port, flags: AI_NUMERICSERV, context: target,
                                                  noAddressErrno: ECONNREFUSED) { candidate, ai in
            var r: Int32
            repeat {
                r = Glibc.connect(candidate, ai.ai_addr, ai.ai_addrlen)
            } while r < 0 && errno == EINTR
            guard r == 0 else { return false }
            var one: Int32 = 1
            _ = setsockopt(candidate, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return true
        }
        if let fd { return fd }
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
