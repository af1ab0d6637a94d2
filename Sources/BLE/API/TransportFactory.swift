import BLEHCI
import BLERuntime
import BLETransport

/// Opens the real transports a spec string names (`tcp:`, `serial:`, `hciN`), optionally
/// recording a btsnoop capture. The in-process virtual radio is not part of this library: the
/// spec `virtual` is opened by `Controllers.open` in the `BLEVirtual` module, the one place that
/// knows every kind of controller (ARCHITECTURE.md: the BLE library does not link the simulator).
public enum TransportFactory {
    /// `spec` falls back to `BLE_HCI` from the environment; with neither, the first Linux
    /// adapter that opens is used. `virtual` fails with `TransportError.Kind.notAvailable`.
    public static func open(spec: String?, capture: String? = nil) async throws -> any HCITransport {
        let parsed: TransportSpec?
        if let spec {
            parsed = try TransportSpec.parse(spec)
        } else {
            parsed = try TransportSpec.fromEnvironment()
        }
        let base: any HCITransport
        if let parsed {
            base = try await openTransport(parsed)
        } else {
            base = try await openFirstAdapter()
        }
        return try await capturing(base, to: capture)
    }

    /// Wraps `base` so every HCI packet is also written to a btsnoop file at `path` (no-op when
    /// `path` is nil). Closes `base` when the file cannot be created.
    public static func capturing(_ base: any HCITransport, to path: String?) async throws -> any HCITransport {
        guard let path else { return base }
        do {
            let writer = try BTSnoopWriter(path: path)
            return CapturingTransport(wrapping: base, sink: writer)
        } catch {
            await base.close()
            throw error
        }
    }

    /// The first Linux adapter (in /sys/class/bluetooth order) whose HCI user channel opens;
    /// failing that, an error that lists every choice.
    public static func openFirstAdapter() async throws -> any HCITransport {
        var failures: [String] = []
        #if canImport(Glibc)
        for index in HCIUserChannelTransport.adapterIndices() {
            do {
                return try await HCIUserChannelTransport.open(index: index)
            } catch {
                failures.append("\(error)")
            }
        }
        #endif
        let tried = failures.isEmpty ? "no Linux Bluetooth adapter was found" : "no Linux adapter could be opened: " + failures.joined(separator: "; ")
        throw BLEError.transport("""
            \(tried).
            Choose a controller with --hci SPEC or BLE_HCI: virtual (an in-process virtual radio with \
            demo devices), tcp:HOST:PORT (a `ble radio --listen` virtual radio, rootcanal, Bumble), \
            serial:PATH[@BAUD] (a UART dongle), hciN (a Linux adapter); or run `ble demo`
            """)
    }
}
