import Synchronization

/// How a fuzz target reports that an invariant did not hold (a round trip that changed the value,
/// a state machine that answered what it must not, a procedure completed twice...).
///
/// A trap inside the code under test is the fuzzer's first signal; a broken invariant is the
/// second, and it must be impossible to miss in every mode:
///
/// - libFuzzer (`ble-fuzz` built with `-DLIBFUZZER`): no collector is installed, so a violation
///   stops the process with `fatalError`. libFuzzer sees the deadly signal and saves the input as
///   `crash-<sha1>`, exactly like a trap in a decoder.
/// - Smoke mode and the tests: the caller runs the target inside `FuzzCheck.collecting`, which
///   installs a collector for the current task; violations are recorded (not fatal), counted, and
///   returned, so the smoke run prints them and the XCTest case fails with their messages.
///
/// The collector is a task-local value rather than a global, so test cases that run concurrently
/// in one process cannot see each other's violations.
public enum FuzzCheck {
    @TaskLocal static var collector: FuzzViolationCollector?

    /// Records a violation when `condition` is false. `message` is only built on failure.
    @inline(__always)
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String,
                               file: StaticString = #fileID, line: UInt = #line) {
        if !condition { fail(message(), file: file, line: line) }
    }

    /// Records a violation unconditionally.
    public static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) {
        let text = "\(file):\(line): \(message)"
        if let collector {
            collector.record(text)
        } else {
            fatalError("fuzz invariant violated: \(text)")
        }
    }

    /// Runs `body` with violations collected instead of fatal; returns what was recorded.
    public static func collecting(_ body: () throws -> Void) rethrows -> FuzzViolations {
        let collector = FuzzViolationCollector()
        try $collector.withValue(collector) { try body() }
        return collector.snapshot
    }
}

/// What a collecting run recorded: the number of violations and the first few messages.
public struct FuzzViolations: Sendable, Hashable {
    public var count: Int
    /// At most `FuzzViolationCollector.keptMessages` messages, in order.
    public var messages: [String]

    public var isEmpty: Bool { count == 0 }

    public init(count: Int = 0, messages: [String] = []) {
        self.count = count
        self.messages = messages
    }

    mutating func add(_ other: FuzzViolations) {
        count += other.count
        for m in other.messages where messages.count < FuzzViolationCollector.keptMessages { messages.append(m) }
    }
}

/// Thread-safe sink for violations (a target may in principle be run from several threads).
final class FuzzViolationCollector: Sendable {
    static let keptMessages = 20
    private let state = Mutex(FuzzViolations())

    func record(_ message: String) {
        state.withLock { s in
            s.count += 1
            if s.messages.count < Self.keptMessages { s.messages.append(message) }
        }
    }

    var snapshot: FuzzViolations { state.withLock { $0 } }
}
