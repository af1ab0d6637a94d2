#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Opt-in diagnostics on stderr (`verbose`, which `ble --verbose` sets), for events the stack
/// survives but a developer may want to see: malformed packets dropped, unexpected events,
/// background work that failed.
public enum HostDiagnostics {
    private static let flag = Atomic<Bool>(false)

    /// Whether `log` writes anything.
    public static var verbose: Bool {
        get { flag.load(ordering: .relaxed) }
        set { flag.store(newValue, ordering: .relaxed) }
    }

    /// Writes one line to stderr, whether or not `verbose` is set.
    public static func write(_ line: String) {
        let text = line + "\n"
        #if canImport(Glibc)
        _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
        #elseif canImport(Darwin)
        _ = text.withCString { Darwin.write(2, $0, strlen($0)) }
        #endif
    }

    /// Writes `line` when `verbose` is set.
    static func log(_ line: @autoclosure () -> String) {
        if verbose { write(line()) }
    }
}
