import BLEHCI

/// What every part of the host may use from the driver that owns it (`HostController`): the
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
