import BLEHCI
import BLETransport

/// Opens the transport a spec string names, optionally recording a btsnoop capture.
public enum TransportFactory {
    /// `spec` falls back to `BLE_HCI` from the environment; with neither, the first Linux
    /// adapter (`hci0`) is tried.
    public static func open(spec: String?, capture: String? = nil) async throws -> any HCITransport {
        let parsed: TransportSpec
        if let spec {
            parsed = try TransportSpec.parse(spec)
        } else if let env = try TransportSpec.fromEnvironment() {
            parsed = env
        } else {
            parsed = try TransportSpec.parse("hci0")
        }
        let base = try await openTransport(parsed)
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
