import BLE
import BLERuntime
import BLETransport

/// The one place that opens a controller of any kind by its spec string: the real transports
/// (through `TransportFactory` in `BLE`) and the in-process virtual radio (`virtual`, a new
/// controller on `VirtualWorld.shared`). Used by the `ble` tool; anything else that takes a
/// `--hci`-style string should use it too, so every kind works everywhere.
public enum Controllers {
    /// Opens the controller `spec` names (`virtual`, `virtual:PROFILE`, `tcp:HOST:PORT`,
    /// `serial:PATH[@BAUD]`, `hciN`). `spec` falls back to `BLE_HCI`; with neither, the first
    /// Linux adapter that opens. With `capture`, every HCI packet is also written to that
    /// btsnoop file. An unknown profile throws `TransportError.Kind.invalidSpec` naming the
    /// profiles there are.
    public static func open(spec: String?, capture: String? = nil) async throws -> any HCITransport {
        let parsed = try spec.map(TransportSpec.parse) ?? TransportSpec.fromEnvironment()
        let profile: VirtualControllerProfile?
        switch parsed {
        case .virtual: profile = .current
        case let .virtualProfile(name): profile = try Self.profile(named: name)
        default: profile = nil
        }
        guard let profile else {
            return try await TransportFactory.open(spec: parsed?.description, capture: capture)
        }
        let base = try await VirtualWorld.sharedController(configuration: profile.configuration)
        return try await TransportFactory.capturing(base, to: capture)
    }

    /// The virtual controller profile called `name`, or an error listing the names there are.
    public static func profile(named name: String) throws -> VirtualControllerProfile {
        guard let profile = VirtualControllerProfile(name: name) else {
            let names = VirtualControllerProfile.allCases.map(\.rawValue).joined(separator: ", ")
            throw TransportError(.invalidSpec, "unknown virtual controller profile '\(name)'; expected one of: \(names)")
        }
        return profile
    }
}
