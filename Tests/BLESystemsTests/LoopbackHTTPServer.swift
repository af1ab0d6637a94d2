#if canImport(Glibc)
import Glibc
#endif
import BLETestSupport
import Foundation
import Synchronization

/// A one-thread HTTP/1.1 server on 127.0.0.1 for the fetcher's tests: each connection gets the
/// request read up to its blank line, then whatever `respond` does with the socket.
final class LoopbackHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    /// Bytes written to clients, over all connections.
    let bytesSent = Mutex(0)
    /// Connections accepted so far (each acceptance an event a test can wait for).
    let connectionsAccepted = SharedValue(0)

    /// `respond` runs on the server's thread with the connected socket and the server.
    init(_ respond: @escaping @Sendable (Int32, LoopbackHTTPServer) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    // Closed here, by the only thread that uses it, not in `stop`: a descriptor
                    // closed there could be reused by the next test's listener while this thread
                    // is still in `respond`, and its next `accept` would serve that test's client.
                    close(fd)
                    return
                }
                connectionsAccepted.withLock { $0 += 1 }
                Self.readRequest(client)
                respond(client, self)
                close(client)
            }
        }
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)/resource" }

    /// Stops accepting: the thread's next (or current) accept fails, and the thread closes the
    /// listener as it ends.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func readRequest(_ client: Int32) {
        var seen: [UInt8] = []
        var byte: UInt8 = 0
        while !seen.ends(with: Array("\r\n\r\n".utf8)), recv(client, &byte, 1, 0) == 1 { seen.append(byte) }
    }

    /// Writes all of `bytes`; false once the client has gone.
    @discardableResult
    func send(_ bytes: [UInt8], to client: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
            bytesSent.withLock { $0 += n }
        }
        return true
    }

    /// Waits until the client closes its side.
    static func waitForClose(_ client: Int32) {
        var byte: UInt8 = 0
        while recv(client, &byte, 1, 0) > 0 {}
    }
}

extension Array where Element: Equatable {
    func ends(with suffix: [Element]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
