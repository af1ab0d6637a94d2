import CoreBluetooth

/// What every example shares: where its lines go, how it ends, and the queue its callbacks (and
/// its timers) run on. The executables print and exit; the tests collect the lines.
open class ExampleApp: NSObject {
    /// The queue given to the manager (nil: main).
    public let queue: DispatchQueue?
    /// Where each line the app would show goes (default: stdout).
    /// Written at once, not buffered, so a run that is killed still shows how far it got.
    public var output: (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
    /// Called once when the app is done, with its exit status (default: `exit`).
    public var finish: (Int32) -> Void = { exit($0) }
    private var finished = false

    /// An app whose callbacks run on `queue` (nil: the main queue).
    public init(queue: DispatchQueue?) {
        self.queue = queue
        super.init()
    }

    /// Shows a line.
    public func show(_ line: String) { output(line) }

    /// Ends the app (once).
    public func done(_ status: Int32) {
        guard !finished else { return }
        finished = true
        finish(status)
    }

    /// Runs `body` after `seconds` on the app's queue (a scan or connect timeout).
    public func after(_ seconds: Double, _ body: @escaping @Sendable () -> Void) {
        (queue ?? .main).asyncAfter(deadline: .now() + seconds, execute: body)
    }

    /// The manager state by name, as S2 prints it.
    public static func name(of state: CBManagerState) -> String {
        switch state {
        case .unknown: return "unknown"
        case .resetting: return "resetting"
        case .unsupported: return "unsupported"
        case .unauthorized: return "unauthorized"
        case .poweredOff: return "poweredOff"
        case .poweredOn: return "poweredOn"
        @unknown default: return "unknown"
        }
    }
}
