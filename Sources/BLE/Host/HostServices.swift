import BLEHCI

/// What every part of the host may use from the driver that owns it (the host actor): the
/// time, the one timer, HCI commands, tasks the host owns, the log, and a way back onto the
/// owner's isolation. None of these is another part: what a part needs of a sibling it declares
/// in its own protocol (`ScanDriver`...), which the driver alone implements (ARCHITECTURE.md,
/// "The host's parts").
protocol HostServices: Actor {
    /// The clock's time now.
    var now: Duration { get }
    /// Set when the controller or transport failed for good.
    var failure: BLEError? { get }
    nonisolated var configuration: HostConfiguration { get }
    /// Arms the host's one timer for the earliest deadline of all the parts.
    func rescheduleTimer()
    /// Sends an HCI command and waits for its Command Complete or Command Status.
    @discardableResult
    func command(_ command: HCICommand, timeout: Duration?) async throws -> CommandResult
    /// Sends an HCI command and returns its Command Complete parameters (status checked).
    @discardableResult
    func commandReturning(_ cmd: HCICommand) async throws -> [UInt8]
    /// Starts a task the host owns (cancelled on close; its errors logged under `name`).
    @discardableResult
    func spawn(_ name: String, _ body: @escaping @Sendable () async throws -> Void) -> UInt64
    nonisolated func log(_ message: String)
    /// Runs `body` on the owner's isolation: how a part's own tasks come back to it.
    func run<T: Sendable>(_ body: @Sendable (isolated Self) async throws -> T) async rethrows -> T
}

extension HostServices {
    /// `command` with the configured command timeout.
    @discardableResult
    func command(_ command: HCICommand) async throws -> CommandResult { try await self.command(command, timeout: nil) }
}

/// The link table (owned by the connection manager) as the parts that keep per-link state in it
/// reach it: plain functions, which the specialised code inlines (a `{ get set }` property
/// requirement is reached through a modify coroutine the optimiser leaves as a call).
protocol LinkTableAccess: HostServices {
    /// Runs `body` on the link with this handle, in place; nil when there is none.
    func withLink<R>(_ handle: UInt16, _ body: (inout Link) -> R) -> R?
    /// Runs `body` on the link with this handle without copying it; nil when there is none.
    func readLink<R>(_ handle: UInt16, _ body: (borrowing Link) -> R) -> R?
    /// A copy of the link with this handle.
    func link(_ handle: UInt16) -> Link?
    func linkHandle(forID id: UInt64) -> UInt16?
    /// The open links' handles, in order.
    var linkHandles: [UInt16] { get }
    func hasLink(_ handle: UInt16) -> Bool
}
