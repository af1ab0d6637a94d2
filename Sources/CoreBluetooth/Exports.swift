// `import CoreBluetooth` brings Foundation with it, as it does on Apple platforms: code written for
// iOS names `Data`, `UUID`, `NSNumber`, `DispatchQueue` and `RunLoop` with this one import.
@_exported import Foundation
@_exported import Dispatch

/// Seconds since 1 January 2001 (CoreFoundation's absolute time), as the iOS 17
/// `didDisconnectPeripheral:timestamp:` callback and `kCBAdvDataTimestamp` give it. Linux
/// Foundation does not export CoreFoundation's name, so it is declared here.
public typealias CFAbsoluteTime = Double

/// The current absolute time (seconds since 1 January 2001), as CoreFoundation's function of the same name.
public func CFAbsoluteTimeGetCurrent() -> CFAbsoluteTime {
    Date().timeIntervalSinceReferenceDate
}
