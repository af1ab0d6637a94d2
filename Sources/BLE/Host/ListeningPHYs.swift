import BLEHCI

/// The PHYs a scan or a connection attempt listens on for advertisements: LE 1M and LE Coded.
/// There is no listening on LE 2M, which carries only auxiliary advertising packets (Vol 6 Part B
/// §4.4.3); LE Coded needs the extended commands (Vol 4 Part E §7.8.64, §7.8.66) and a controller
/// whose LE features list it. Checked before any command, so a refusal never disturbs what runs.
enum ListeningPHYs {
    /// What listens: a scan, or the initiator of a connection.
    enum Purpose {
        case scanning, initiating
    }

    /// Throws `invalidArgument` for an empty set or one with LE 2M, `unsupported` for LE Coded
    /// without the extended commands (`extended`) or on a controller without it (`supported`).
    static func validate(_ phys: LEPHYSet, for purpose: Purpose, extended: Bool, supported: LEPHYSet) throws {
        guard !phys.isEmpty, phys.isSubset(of: [.le1M, .leCoded]) else {
            throw BLEError.invalidArgument(purpose == .scanning ? "a scan listens on LE 1M, LE Coded or both"
                                                                : "a connection is initiated on LE 1M, LE Coded or both")
        }
        guard phys.contains(.leCoded) else { return }
        guard extended else {
            let needs = purpose == .scanning ? "scanning on the LE Coded PHY needs Bluetooth 5's extended scanning commands"
                                             : "connecting on the LE Coded PHY needs LE Extended Create Connection"
            throw BLEError.unsupported(needs + ", which this controller does not list (or HostConfiguration.advertisingCommands is .legacy)")
        }
        guard supported.contains(.leCoded) else {
            throw BLEError.unsupported("this controller's LE features do not list the LE Coded PHY")
        }
    }
}
