import BLEHCI
import BLETransport

/// Opens the transport a spec string names, optionally recording a btsnoop capture.
public enum TransportFactory {
    /// `spec` falls back to `BLE_HCI` from the environment; with neither, the first Linux
    /// adapter (`hci0`) is tried.
    public static func open(spec: String?, capture: String? = nil) async throws -> any HCITransport {
        let base: any HCITransport
        if let spec {
            base = try await openTransport(try TransportSpec.parse(spec))
        } else if let env = try TransportSpec.fromEnvironment() {
            base = try await openTransport(env)
        } else {
            do {
                base = try await openTransport(try TransportSpec.parse("hci0"))
            } catch {
                throw BLEError.transport("""
                    no controller given and the first Linux adapter could not be opened (\(error)).
                    Choose one with --hci SPEC or BLE_HCI: tcp:HOST:PORT (a `ble radio --listen` virtual radio, \
                    rootcanal, Bumble), serial:PATH[@BAUD] (a UART dongle), hciN (a Linux adapter); \
                    or run `ble demo` to see the built-in virtual radio
                    """)
            }
        }
        guard let capture else { return base }
        do {
            let writer = try BTSnoopWriter(path: capture)
            return CapturingTransport(wrapping: base, sink: writer)
        } catch {
            await base.close()
            throw error
        }
    }
}
