import Foundation

// Apple API that iOS code names but this stack does not provide yet: declared so such code
// compiles, each answering as a controller without the feature would.

/// What `registerForConnectionEvents(options:)` matches on (iOS only).
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    /// The key's string.
    public var rawValue: String
    /// A key from its string.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Match peripherals offering these services (`[CBUUID]`).
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// Match these peripherals (`[UUID]`).
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

extension CBCentralManager {
    /// Connection events for matching peers (iOS only): accepted, and never reported on Linux.
    public func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {}
}
