import Synchronization
import BLE
import Foundation

/// What the central and peripheral managers share: the queue their callbacks run on, the
/// delegate (kept weakly), the controller they open (through `CBHost`, one per controller spec)
/// and reopen after it is lost, their state and its report, and their authorization.
open class CBManager: NSObject, @unchecked Sendable {
    let managerState = Mutex(CBManagerState.unknown)
    /// The queue every callback runs on.
    let queue: DispatchQueue
    /// The controller (`SwiftBLEManagerOptionHCIKey`); nil: `BLE_HCI`, else the first Linux adapter.
    let spec: String?
    /// The delegate, kept weakly; each manager's `delegate` gives it its protocol's type.
    let delegateReference = WeakReference<AnyObject>(nil)

    /// A manager with no delegate on the main queue, opening its controller.
    override init() {
        self.queue = .main
        self.spec = nil
        super.init()
        open()
    }

    /// A manager whose callbacks run on `queue` (nil: the main queue), opening its controller. Of
    /// the options, only `SwiftBLEManagerOptionHCIKey` (the controller) means something on Linux;
    /// Apple's keys are accepted and ignored.
    init(delegate: AnyObject?, queue: DispatchQueue?, options: [String: Any]?) {
        self.queue = queue ?? .main
        self.spec = options?[SwiftBLEManagerOptionHCIKey] as? String
        super.init()
        delegateReference.value = delegate
        open()
    }

    /// The manager's state: `.unknown` until the delegate's state callback, then `.poweredOn` once
    /// the controller is up (or why not).
    open var state: CBManagerState { managerState.current }
    /// Always `.allowedAlways`: Linux has no per-app Bluetooth permission.
    open class var authorization: CBManagerAuthorization { .allowedAlways }
    /// Always `.allowedAlways` (deprecated on Apple platforms in favour of the class property).
    open var authorization: CBManagerAuthorization { .allowedAlways }

    // MARK: Opening the controller

    /// Opens (or joins) the controller and takes it on, then reports `.poweredOn`. Each manager
    /// overrides it with its own steps, run by `open(reportingFailure:_:)`; `reportingFailure` is
    /// false when reopening after a lost controller.
    func open(reportingFailure: Bool = true) {}

    /// Runs `body` (open the controller `spec` names and take it on; it holds the manager weakly)
    /// in a task. A failure to open reports the state it leaves the manager in (the reason on
    /// stderr), or, when not `reportingFailure`, tries again a second later.
    func open(reportingFailure: Bool, _ body: @escaping @Sendable (_ spec: String?) async throws -> Void) {
        let spec = self.spec
        Task { [weak self] in
            do {
                try await body(spec)
            } catch {
                guard let self else { return }
                if reportingFailure {
                    let state = CBManager.state(after: error)
                    CBLog.warning("no Bluetooth controller (\(state)): \(error)")
                    self.changeState(state)
                } else {
                    self.reopenLater()
                }
            }
        }
    }

    /// The controller was lost: `.poweredOff` now, and `.poweredOn` again once it can be opened
    /// (tried every second), as Apple's managers follow Bluetooth being switched off and on.
    func controllerLost() {
        changeState(.poweredOff)
        reopenLater()
    }

    /// Tries to open the controller again in a second, without reporting a failure.
    func reopenLater() {
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(1))
            self?.open(reportingFailure: false)
        }
    }

    /// The state a failure to open the controller leaves a manager in (the reason goes to stderr):
    /// no permission is `.unauthorized`, no controller at all `.unsupported`, else `.poweredOff`.
    static func state(after error: any Error) -> CBManagerState {
        if let t = error as? TransportError {
            let text = "\(t)".lowercased()
            if text.contains("permission") || text.contains("not permitted") { return .unauthorized }
            if t.kind == .notAvailable { return .unsupported }
            return .poweredOff
        }
        if case let BLEError.transport(message) = error, message.contains("no Linux") { return .unsupported }
        if case BLEError.unsupported = error { return .unsupported }
        return .poweredOff
    }

    // MARK: State

    /// Sets the state on the delegate queue, then `stateChanged(from:to:)` reports it there.
    func changeState(_ new: CBManagerState) {
        queue.async {
            let old = self.managerState.withLock { s -> CBManagerState in
                defer { s = new }
                return s
            }
            self.stateChanged(from: old, to: new)
        }
    }

    /// On the delegate queue, once the state was set from `old` to `new` (maybe the same): each
    /// manager overrides it to tell its delegate.
    func stateChanged(from old: CBManagerState, to new: CBManagerState) {}

    /// `value` (evaluated only then) when the manager is `.poweredOn`; else, or when it is nil,
    /// nil with Apple's API-misuse warning for `command` on the manager `name`s.
    func poweredOn<Value>(_ command: String, manager name: String, _ value: () -> Value?) -> Value? {
        guard state == .poweredOn, let value = value() else {
            warnNotPoweredOn(command, manager: name)
            return nil
        }
        return value
    }

    /// Apple's warning for a command given while not powered on.
    func warnNotPoweredOn(_ command: String, manager name: String) {
        CBLog.warning("API MISUSE: <\(name): \(pointerText(self))> can only accept this command (\(command)) while in the powered on state")
    }
}
