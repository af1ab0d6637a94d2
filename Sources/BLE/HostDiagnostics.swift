#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Opt-in diagnostics on stderr (`BLE_DEBUG=1` or `ble --verbose`), for events the stack
/// survives but a developer may want to see: malformed packets dropped, unexpected events.
public enum HostDiagnostics {
    private static let flag = Atomic<Bool>(false)

    public static var verbose: Bool {
        get { flag.load(ordering: .relaxed) }
        set { flag.store(newValue, ordering: .relaxed) }
    }

    public static func write(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
    }
}
