import BLE
import BLETransport
import BLEVirtualRadio

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

    private init(listener: TCPListener) {
        self.listener = listener
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

    /// Accepts hosts until `close()`, and serves each as a new controller on `radio` with public
    /// address `address(number)` (see `VirtualRadio.serve(hostTransport:address:configuration:)`).
    /// `connected` is called as a host's controller is added, `ended` when its session is over
    /// (the controller already removed from the medium), with how it ended. Returns when the
    /// listener is closed and every session has ended (`VirtualRadio.shutdown()` ends them all).
    public func serve(_ radio: VirtualRadio,
                      address: @escaping @Sendable (_ number: Int) -> BDAddress,
                      connected: @escaping @Sendable (Session) -> Void = { _ in },
                      ended: @escaping @Sendable (Session, VirtualRadio.HostSessionEnd) -> Void = { _, _ in }) async {
        await withTaskGroup(of: Void.self) { sessions in
            var index = 0
            for await connection in listener.connections {
                index += 1
                let session = Session(number: index, peer: connection.peer, address: address(index))
                sessions.addTask {
                    connected(session)
                    let end = await radio.serve(hostTransport: connection, address: session.address)
                    ended(session, end)
                }
            }
        }
    }

    /// Stops accepting hosts: `serve` returns once the sessions under way have ended. Those
    /// already connected stay until they leave or the radio shuts down.
    public func close() async {
        await listener.close()
    }
}
