/// How a command ended successfully at the HCI level.
///
/// A Command Complete is returned as `.complete` even when its first return byte is a non-zero
/// status: only the command knows whether its return parameters start with a status (every one
/// in this module does) and several callers want the bytes anyway. Use `checkStatus(_:)` or a
/// `HCIReturnParameters` type (which throws `commandFailed`) to turn that status into an error.
/// A Command Status with a non-zero status, by contrast, fails the command outright.
public enum CommandResult: Hashable, Sendable {
    /// Command Complete, with the return parameters (status byte first).
    case complete(returnParameters: [UInt8])
    /// Command Status with status Success: the controller accepted the command and will report
    /// the outcome with a later event (e.g. LE Connection Complete).
    case status

    /// The controller's status: Command Status success, or the first return byte (nil if the
    /// return parameters are empty).
    public var controllerStatus: HCIStatus? {
        switch self {
        case .status: return .success
        case let .complete(params): return params.first.map(HCIStatus.init(rawValue:))
        }
    }

    /// Throws `commandFailed` for a non-zero status byte in Command Complete, `malformed` for
    /// empty return parameters.
    public func checkStatus(_ opcode: HCIOpcode) throws(HCIError) {
        if case let .complete(params) = self { try checkStatusReturnParameters(opcode, params) }
    }

    /// Decodes typed return parameters, checking the status.
    public func decode<T: HCIReturnParameters>(_ type: T.Type) throws(HCIError) -> T {
        switch self {
        case let .complete(params): return try T(returnParameters: params)
        case .status: throw HCIError.unexpectedReturnParameters(opcode: T.opcode)
        }
    }
}

/// The end of one queued command: the caller's token and what happened.
public struct CommandCompletion: Sendable {
    public var token: UInt64
    public var opcode: HCIOpcode
    public var result: Result<CommandResult, HCIError>

    public init(token: UInt64, opcode: HCIOpcode, result: Result<CommandResult, HCIError>) {
        self.token = token
        self.opcode = opcode
        self.result = result
    }

    /// The result, throwing its error and any non-zero Command Complete status.
    public func get() throws(HCIError) -> CommandResult {
        let r: CommandResult
        switch result {
        case let .success(v): r = v
        case let .failure(e): throw e
        }
        try r.checkStatus(opcode)
        return r
    }
}

/// Host-to-controller command flow control, sans-IO. Core spec Vol 4 Part E §4.4.
///
/// The controller says how many commands it can take with Num_HCI_Command_Packets in every
/// Command Complete and Command Status (including the credit-only ones with opcode 0x0000,
/// §7.7.14). This keeps the FIFO of commands waiting for such a credit, the commands sent and not
/// yet answered, and a deadline for each sent one; it never reads a clock.
///
/// Time: every `now` is a `Duration` since an arbitrary origin chosen by the caller (for example
/// `ContinuousClock.now - start`, or a virtual clock in tests); only differences matter. A
/// command's timeout runs from when it is handed out to send, not from when it is queued, because
/// it measures the controller's answer; a queued command waits as long as the ones ahead of it.
///
/// A sent command ends on the first Command Complete or Command Status carrying its opcode
/// (oldest first for equal opcodes). Commands the controller answers with Command Status (LE
/// Create Connection, Disconnect, LE Connection Update, ...; `HCIOpcode.completesWithCommandStatus`)
/// therefore end on the status; their outcome comes in a later event the caller watches for.
///
/// Controllers that answer wrongly (VirtualControllerQuirk.swift documents each) are taken as
/// public hosts take them:
/// - a completion whose opcode matches no sent command (a duplicate, or one for another
///   command) only updates the credits, and a Command Complete for No Operation (0x0000) is
///   never matched (§7.7.14);
/// - with batches marked (`beginBatch`), a completion never ends a command sent while its own
///   batch was being handled: the controller sent it before it could have seen that command,
///   so a stale duplicate in the same batch cannot answer the next command with its opcode;
/// - a Command Complete for Reset that matches no sent Reset while other commands are
///   outstanding, during the host's initialisation (`initialisationEnded` not yet called), is a
///   controller that reset on its own and lost them (Linux `net/bluetooth/hci_core.c`
///   `hci_req_cmd_complete`, some CSR controllers during init; Linux too resends only while
///   initialising): they are sent again, first in the queue, with fresh deadlines. A Reset that
///   timed out makes the next such completion that matches no Reset its late answer, not a
///   spontaneous one (a Reset sent again meanwhile takes the first completion that comes).
///   After initialisation an unsolicited Reset completion only gives credits.
///
/// Batches are only as good as the transport's reads: a transport that hands frames over one by
/// one makes each frame its own batch, and then a duplicate completion that arrives after the
/// next command with its opcode was sent answers that command, as it does in Linux, Zephyr and
/// Bumble, which match completions by opcode alone.
public struct CommandFlowController: Sendable {
    struct Entry: Sendable {
        var token: UInt64
        var command: HCICommand
        var timeout: Duration
        var deadline: Duration
        /// `batch` when it was handed out to send.
        var sentInBatch: UInt64 = 0
    }

    /// Commands that may be sent now. Starts at 1, as the spec lets the host send one command
    /// after power-on or reset before hearing from the controller (§4.4).
    public private(set) var credits: Int = 1
    private var queued: [Entry] = []
    private var sent: [Entry] = []
    /// The batch of controller frames being handled (`beginBatch`); 0 while the caller marks
    /// none, when every sent command may be answered by any completion.
    private var batch: UInt64 = 0
    /// Resets that timed out unanswered: a late Command Complete for Reset is theirs, not a
    /// spontaneous one.
    private var resetsTimedOut = 0
    /// Whether an unsolicited Reset completion sends the lost commands again: only while the
    /// host initialises the controller.
    private var initialising = true

    public init() {}

    /// Commands waiting for a credit.
    public var queuedCount: Int { queued.count }
    /// Commands sent and not yet answered.
    public var outstandingCount: Int { sent.count }
    /// Opcodes of the commands sent and not yet answered, oldest first.
    public var outstandingOpcodes: [HCIOpcode] { sent.map(\.command.opcode) }

    /// The host finished initialising the controller: from now on an unsolicited Reset
    /// completion no longer sends commands again, and Resets that timed out are forgotten.
    public mutating func initialisationEnded() {
        initialising = false
        resetsTimedOut = 0
    }

    /// Marks the start of a batch of frames from the controller that were all read before
    /// anything sent while handling them (one transport read). Commands handed out during the
    /// batch can only be answered in a later one.
    public mutating func beginBatch() {
        batch &+= 1
    }

    /// Queues a command; returns the commands to send now (this one, if a credit is free and
    /// nothing is ahead of it).
    public mutating func enqueue(_ command: HCICommand, token: UInt64, now: Duration, timeout: Duration) -> [HCICommand] {
        queued.append(Entry(token: token, command: command, timeout: timeout, deadline: .zero))
        return drain(now: now)
    }

    /// Feeds an event from the controller. Command Complete/Status update the credits and end the
    /// matching command; other events are ignored (the caller handles Hardware Error with
    /// `failAll`). Returns the ended commands and those that can now be sent.
    public mutating func receive(_ event: HCIEvent, now: Duration) -> (completions: [CommandCompletion], toSend: [HCICommand]) {
        var completions: [CommandCompletion] = []
        switch event {
        case let .commandComplete(n, opcode, returnParameters):
            credits = Int(n)
            if let entry = takeSent(opcode) {
                completions.append(CommandCompletion(token: entry.token, opcode: opcode, result: .success(.complete(returnParameters: returnParameters))))
            } else if opcode == .reset {
                if resetsTimedOut > 0 {
                    resetsTimedOut -= 1
                } else if initialising {
                    resendAfterSpontaneousReset()
                }
            }
        case let .commandStatus(status, n, opcode):
            credits = Int(n)
            if let entry = takeSent(opcode) {
                let result: Result<CommandResult, HCIError> = status.isSuccess ? .success(.status) : .failure(.commandFailed(opcode: opcode, status: status))
                completions.append(CommandCompletion(token: entry.token, opcode: opcode, result: result))
            }
        default:
            return ([], [])
        }
        return (completions, drain(now: now))
    }

    /// The earliest deadline of a sent command, for the caller's timer. A loop that makes no
    /// array: the host asks after every batch of frames it receives.
    public var nextDeadline: Duration? {
        var next: Duration?
        for entry in sent { next = next.map { min($0, entry.deadline) } ?? entry.deadline }
        return next
    }

    /// Fails every sent command whose deadline is at or before `now` with `commandTimeout`.
    /// Each expiry gives back a slot (at least one credit), as a controller that lost a command
    /// would otherwise stall the queue forever; returns what can be sent as a result.
    public mutating func expire(now: Duration) -> (completions: [CommandCompletion], toSend: [HCICommand]) {
        var completions: [CommandCompletion] = []
        sent.removeAll { entry in
            guard entry.deadline <= now else { return false }
            completions.append(CommandCompletion(token: entry.token, opcode: entry.command.opcode, result: .failure(.commandTimeout(opcode: entry.command.opcode))))
            if entry.command.opcode == .reset { resetsTimedOut += 1 }
            return true
        }
        if !completions.isEmpty { credits = max(credits, 1) }
        return (completions, drain(now: now))
    }

    /// Fails every queued and sent command (hardware error, transport closed) and returns to the
    /// power-on state of one credit.
    public mutating func failAll(_ error: HCIError) -> [CommandCompletion] {
        let all = sent + queued
        sent.removeAll()
        queued.removeAll()
        credits = 1
        resetsTimedOut = 0
        initialising = true
        return all.map { CommandCompletion(token: $0.token, opcode: $0.command.opcode, result: .failure(error)) }
    }

    /// Removes a queued, not yet sent command. Returns false if it is not queued (already sent:
    /// the controller will still answer it, and that answer is then dropped by the caller).
    public mutating func cancel(token: UInt64) -> Bool {
        guard let i = queued.firstIndex(where: { $0.token == token }) else { return false }
        queued.remove(at: i)
        return true
    }

    private mutating func takeSent(_ opcode: HCIOpcode) -> Entry? {
        guard opcode != .noOperation,
              let i = sent.firstIndex(where: { $0.command.opcode == opcode && answerable($0) }) else { return nil }
        return sent.remove(at: i)
    }

    /// Whether a completion in the current batch may answer `entry`.
    private func answerable(_ entry: Entry) -> Bool {
        batch == 0 || entry.sentInBatch != batch
    }

    /// A Command Complete for Reset that answers no sent Reset: the controller reset itself and
    /// will never answer the commands it had (the Linux host resends the last one). Those the
    /// controller could have seen go back to the front of the queue, in order.
    private mutating func resendAfterSpontaneousReset() {
        let lost = sent.filter(answerable)
        guard !lost.isEmpty else { return }
        sent.removeAll(where: answerable)
        queued.insert(contentsOf: lost, at: 0)
    }

    private mutating func drain(now: Duration) -> [HCICommand] {
        var out: [HCICommand] = []
        while credits > 0, !queued.isEmpty {
            var entry = queued.removeFirst()
            entry.deadline = now + entry.timeout
            entry.sentInBatch = batch
            credits -= 1
            sent.append(entry)
            out.append(entry.command)
        }
        return out
    }
}
