import BLE
import BLETransport
import BLEVirtualRadio
import Synchronization

/// A virtual radio served over TCP, in the manner of rootcanal's HCI port (`ble radio --listen`):
/// each host that connects (H4 over TCP, e.g. `--hci tcp:HOST:PORT`, `BLE_HCI`, or Bumble's
/// `tcp-client:HOST:PORT`) is served as a new virtual LE controller on one `VirtualRadio`, so
/// processes with no hardware find and connect to each other.
///
/// ```swift
/// let server = try VirtualRadioServer.listen(host: "127.0.0.1", port: 0)
/// let radio = VirtualRadio()
/// print("hosts connect to", server)   // tcp:127.0.0.1:PORT
/// await server.serve(radio, address: { n in BDAddress(rawValue: 0x00_5A_B1_00_00_00 | UInt64(n)) })
/// ```
public final class VirtualRadioServer: Sendable, CustomStringConvertible {
    /// One host's connection, served as the controller with public address `address`.
    public struct Session: Sendable {
        /// The connection's number: 1 for the first host accepted, counting up.
        public let number: Int
        /// The host's end of the connection, as the socket names it (`127.0.0.1:54012`).
        public let peer: String
        /// The public address of the controller this host was given.
        public let address: BDAddress
    }

    private let listener: TCPListener
    /// Hosts accepted so far, by every `serve` loop: each gets the next number, so two loops on
    /// one server never give two hosts one address.
    private let accepted = Mutex(0)

    private init(listener: TCPListener) {
        self.listener = listener
    }

    /// A server let go stops listening (its accept thread would otherwise keep it, and the port,
    /// for the life of the process).
    deinit {
        let listener = self.listener
        Task { await listener.close() }
    }

    /// Opens a TCP listening socket at `host:port` for hosts to connect to; port 0 picks a free
    /// port (read it from `port`). Throws `TransportError` when the address cannot be bound.
    public static func listen(host: String, port: UInt16) throws -> VirtualRadioServer {
        VirtualRadioServer(listener: try TCPListener.listen(host: host, port: port))
    }

    /// The port listened on: the one asked for, or the free port picked for 0.
    public var port: UInt16 { listener.port }

    /// Where hosts connect, as a transport spec (`tcp:127.0.0.1:6402`, `tcp:[::1]:6402`).
    public var description: String { listener.description }

    /// Accepts hosts until `close()` (or until the task running it is cancelled, which closes
    /// the server too), and serves each as a new controller on `radio` with public address
    /// `address(number)` (see `VirtualRadio.serve(hostTransport:address:configuration:)`);
    /// numbers count up from 1 across every `serve` of this server. `connected` is called as a
    /// host's controller is added, `ended` when its session is over (the controller already
    /// removed from the medium), with how it ended. Returns when the listener is closed and
    /// every session has ended.
    public func serve(_ radio: VirtualRadio,
                      address: @escaping @Sendable (_ number: Int) -> BDAddress,
                      configuration: VirtualControllerConfiguration? = nil,
                      connected: @escaping @Sendable (Session) -> Void = { _ in },
                      ended: @escaping @Sendable (Session, VirtualRadio.HostSessionEnd) -> Void = { _, _ in }) async {
        await withTaskGroup(of: Void.self) { sessions in
            for await connection in listener.connections {
                let number = accepted.withLock { n in
                    n += 1
                    return n
                }
                let session = Session(number: number, peer: connection.peer, address: address(number))
                sessions.addTask {
                    connected(session)
                    let end = await radio.serve(hostTransport: connection, address: session.address, configuration: configuration)
                    ended(session, end)
                }
            }
            // Cancelled (or closed): no host is accepted that nobody serves.
            await listener.close()
        }
    }

    /// Stops accepting hosts and closes the connections of those it serves, whose sessions then
    /// end as when a host leaves; `serve` returns once they have ended.
    public func close() async {
        await listener.close()
    }
}
