/// `cb-heart-rate [MEASUREMENTS] [NAME] [--min-rssi DBM]`, parsed: how many measurements to
/// show (0 or none: until interrupted), a name filter, and the RSSI gate of docs/SYSTEMS.md S3
/// (default −70 dBm, as `ble heart-rate --min-rssi` takes it; a test against rootcanal, which
/// reports weak signals, lowers it).
public struct HeartRateMonitorArguments: Equatable, Sendable {
    /// The line a wrong command line prints.
    public static let usage = "usage: cb-heart-rate [MEASUREMENTS] [NAME] [--min-rssi DBM]"

    /// Measurements before the app disconnects and exits (0: never).
    public var measurements = 0
    /// Only monitors whose name contains this (nil: any).
    public var nameContains: String?
    /// Monitors heard weaker than this (dBm) are refused.
    public var minimumRSSI = -70

    /// What a wrong command line says, after which `usage` follows.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The arguments after the program's name; `--min-rssi DBM` or `--min-rssi=DBM` anywhere,
    /// DBM a whole number between −127 and 20 (the range of an advertising report's RSSI,
    /// Core spec Vol 4 Part E §7.7.65.2).
    public init(_ arguments: [String]) throws {
        var positionals: [String] = []
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            let text: String
            if argument == "--min-rssi" {
                guard let value = rest.popFirst() else { throw Failure(description: "--min-rssi needs a value in dBm") }
                text = value
            } else if argument.hasPrefix("--min-rssi=") {
                text = String(argument.dropFirst("--min-rssi=".count))
            } else if argument.hasPrefix("--") {
                throw Failure(description: "unknown option \(argument)")
            } else {
                positionals.append(argument)
                continue
            }
            guard let value = Int(text), (-127...20).contains(value) else {
                throw Failure(description: "--min-rssi expects dBm between -127 and 20, got '\(text)'")
            }
            minimumRSSI = value
        }
        guard positionals.count <= 2 else { throw Failure(description: "too many arguments") }
        if let first = positionals.first {
            guard let count = Int(first), count >= 0 else { throw Failure(description: "MEASUREMENTS must be a whole number, got '\(first)'") }
            measurements = count
        }
        nameContains = positionals.dropFirst().first
    }
}
