import BLEHCI
import BLETransport

/// Opens the transport a spec string names, optionally recording a btsnoop capture.
public enum TransportFactory {
    /// `spec` falls back to `BLE_HCI` from the environment; with neither, the first Linux
    /// adapter that opens is used. `virtual` is a new controller on this process's shared
    /// virtual radio (`VirtualWorld.shared`).
    public static func open(spec: String?, capture: String? = nil) async throws -> any HCITransport {
        let base: any HCITransport
        if let spec {
            base = try await open(try TransportSpec.parse(spec))
        } else if let env = try TransportSpec.fromEnvironment() {
            base = try await open(env)
        } else {
            base = try await openFirstAdapter()
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

extension TransportFactory {
    static func open(_ spec: TransportSpec) async throws -> any HCITransport {
        if case .virtual = spec { return try await VirtualWorld.sharedController() }
        return try await openTransport(spec)
    }

    /// The first Linux adapter (in /sys/class/bluetooth order) whose HCI user channel opens;
    /// failing that, an error that lists every choice.
    static func openFirstAdapter() async throws -> any HCITransport {
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
