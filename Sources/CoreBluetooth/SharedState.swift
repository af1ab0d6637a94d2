import Foundation
import Synchronization

extension Mutex where Value: Sendable {
    /// A copy of the value, read under the lock. The CoreBluetooth objects are used from any
    /// queue, so their mutable state lives in a `Mutex` and is only touched inside `withLock`.
    var current: Value { withLock { $0 } }
}

/// A weak reference to a delegate, kept under a lock.
final class WeakReference<Object: AnyObject>: Sendable {
    /// @unchecked: the object is only carried in and out under the mutex, never used here.
    private struct Box: @unchecked Sendable { weak var object: Object? }
    private let box: Mutex<Box>

    init(_ object: Object?) { box = Mutex(Box(object: object)) }

    var value: Object? {
        get { box.withLock { $0 }.object }
        set {
            let new = Box(object: newValue)
            box.withLock { $0 = new }
        }
    }
}

/// The stack's diagnostics for the app's developer, on stderr as CoreBluetooth logs its API
/// misuse warnings to the console.
enum CBLog {
    static func warning(_ message: String) {
        FileHandle.standardError.write(Data(("[CoreBluetooth] " + message + "\n").utf8))
    }
}

/// `0x…` for an object, as Objective-C's `%p` prints it in descriptions.
func pointerText(_ object: AnyObject) -> String {
    "0x" + String(UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), radix: 16)
}

/// Apple's `NSData` description: `{length = 2, bytes = 0x0645}` (long values elided in the middle).
func dataText(_ data: Data?) -> String {
    guard let data else { return "(null)" }
    let bytes = [UInt8](data)
    func hex(_ s: ArraySlice<UInt8>) -> String { s.map { String(format: "%02x", $0) }.joined() }
    let text = bytes.count <= 24 ? hex(bytes[...]) : hex(bytes.prefix(8)) + " ... " + hex(bytes.suffix(8))
    return "{length = \(bytes.count), bytes = 0x\(text)}"
}
