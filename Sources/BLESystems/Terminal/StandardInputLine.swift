import Dispatch
import Synchronization

/// The process's questions to the user, one at a time, and the one reader of their answers.
///
/// Every prompt that wants a line (a pairing's passkey or numeric comparison, `ble accel`'s
/// device choice) asks through one `LinePrompts` (`standardInput` for the terminal), which
/// keeps them in a queue: only the first is shown and answered; the others wait, each told whom
/// it is for. A line goes only to the prompt that is current when it arrives, and a line that
/// arrives when no prompt is current is dropped, so an answer can never reach a question the
/// user has not been shown, nor a question left over from a pairing that ended.
///
/// There is one read in flight at most: a blocking `reading` call (`readLine()` for stdin) runs
/// on a Dispatch thread while some prompt waits (a blocking read must not hold a thread of
/// Swift's pool). Nothing can interrupt the blocked read(2), so when every prompt has left the
/// read stays blocked; its line then goes to the next prompt if that is current by the time the
/// line comes, else is dropped. A `LinePrompts` made without `reading` reads nothing: its lines
/// come from `deliver(_:)` (a terminal in raw mode that reads keys, or a test).
///
/// A prompt whose task is cancelled leaves the queue at once and gets no line (`.cancelled`);
/// the next one becomes current. At most `limit` prompts wait (the current one included): more
/// are refused at once (`.refused`), so a peer that keeps pairings open cannot make the queue
/// grow, only keep its own questions in it. At the end of input every prompt, waiting or
/// later, gets `.endOfInput`.
public final class LinePrompts: Sendable {
    /// The prompts of the process on its standard input.
    public static let standardInput = LinePrompts(reading: { readLine() })

    /// How many prompts may wait at once by default.
    public static let defaultLimit = 4

    /// What a prompt got.
    public enum Answer: Sendable, Equatable {
        /// The line the user typed while the prompt was current (without its newline).
        case line(String)
        /// The input ended.
        case endOfInput
        /// `limit` prompts were already waiting: refused without being shown.
        case refused
        /// The prompt's task was cancelled before a line came.
        case cancelled
    }

    private struct Waiter {
        let subject: String
        let lines: [String]
        let show: @Sendable (String) -> Void
        let continuation: CheckedContinuation<Answer, Never>
    }

    private enum Slot {
        /// `ask` has its number, not yet its place in the queue.
        case reserved
        /// Cancelled before it had its place.
        case cancelled
        case waiting(Waiter)
    }

    private struct State {
        var slots: [UInt64: Slot] = [:]
        /// Waiting prompts in order; the first is current.
        var order: [UInt64] = []
        var nextID: UInt64 = 1
        var reading = false
        var ended = false
    }

    /// Side effects decided under the lock, carried out after it.
    private enum Effect {
        case show(@Sendable (String) -> Void, String)
        case resume(CheckedContinuation<Answer, Never>, Answer)
        case read
    }

    /// At most this many prompts wait at once; more are refused.
    public let limit: Int
    private let reading: (@Sendable () -> String?)?
    private let state = Mutex(State())

    /// Prompts answered by `reading`, a blocking read of one line (nil at the end of input),
    /// called on a Dispatch thread, one call at a time, only while a prompt waits.
    public init(limit: Int = LinePrompts.defaultLimit, reading: @escaping @Sendable () -> String?) {
        self.limit = max(1, limit)
        self.reading = reading
    }

    /// Prompts answered only by `deliver(_:)`.
    public init(limit: Int = LinePrompts.defaultLimit) {
        self.limit = max(1, limit)
        self.reading = nil
    }

    /// How many prompts are waiting, the current one included.
    public var waiting: Int { state.withLock { $0.order.count } }

    /// What the current prompt is about, nil when none waits.
    public var current: String? {
        state.withLock { s in
            guard let id = s.order.first, case let .waiting(w)? = s.slots[id] else { return nil }
            return w.subject
        }
    }

    /// Waits for its turn, then shows `lines` with `show` and returns the next line that
    /// arrives while it is current. `subject` names whom the question is for (a peer's
    /// address); a prompt that must wait is told whose question is current. Refused at once
    /// when `limit` prompts wait; cancelling the task withdraws it.
    public func ask(_ lines: [String], about subject: String, show: @escaping @Sendable (String) -> Void) async -> Answer {
        let id = state.withLock { s -> UInt64 in
            defer { s.nextID &+= 1 }
            s.slots[s.nextID] = .reserved
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                enqueue(id, Waiter(subject: subject, lines: lines, show: show, continuation: continuation))
            }
        } onCancel: {
            withdraw(id)
        }
    }

    /// One line for the caller, with nothing shown: nil at the end of input;
    /// `CancellationError` when the task is cancelled, `LinePromptsFull` when refused.
    public func line(about subject: String = "a line of input") async throws -> String? {
        switch await ask([], about: subject, show: { _ in }) {
        case let .line(text): return text
        case .endOfInput: return nil
        case .cancelled: throw CancellationError()
        case .refused: throw LinePromptsFull(limit: limit)
        }
    }

    /// The current prompt's turn: a number no other prompt of this `LinePrompts` has; nil when
    /// none waits. A reader that assembles lines itself (`TerminalKeyLine`) keeps it with what is
    /// typed, so a line begun for one question is never handed to the next.
    public var turn: UInt64? { state.withLock { $0.order.first } }

    /// Hands `line` (nil: the input ended) to the current prompt; dropped when none is current.
    public func deliver(_ line: String?) {
        perform(state.withLock { deliver(line, &$0) })
    }

    /// Hands `line` to the current prompt if its turn is still `turn`; dropped otherwise.
    public func deliver(_ line: String, turn: UInt64) {
        perform(state.withLock { s in
            guard s.order.first == turn else { return [] }
            return deliver(line, &s)
        })
    }

    private func deliver(_ line: String?, _ s: inout State) -> [Effect] {
        guard let line else {
            s.ended = true
            let all = s.order.compactMap { id -> Effect? in
                guard case let .waiting(w)? = s.slots.removeValue(forKey: id) else { return nil }
                return .resume(w.continuation, .endOfInput)
            }
            s.order.removeAll()
            return all
        }
        guard let id = s.order.first, case let .waiting(w)? = s.slots.removeValue(forKey: id) else { return [] }
        s.order.removeFirst()
        return [.resume(w.continuation, .line(line))] + Self.startCurrent(&s, reading: reading != nil)
    }

    private func enqueue(_ id: UInt64, _ waiter: Waiter) {
        let effects = state.withLock { s -> [Effect] in
            guard case .reserved? = s.slots[id] else {
                s.slots[id] = nil
                return [.resume(waiter.continuation, .cancelled)]
            }
            if s.ended {
                s.slots[id] = nil
                return [.resume(waiter.continuation, .endOfInput)]
            }
            guard s.order.count < limit else {
                s.slots[id] = nil
                return [.show(waiter.show, "ble: \(waiter.subject): refused, \(limit) questions are waiting already"),
                        .resume(waiter.continuation, .refused)]
            }
            s.slots[id] = .waiting(waiter)
            s.order.append(id)
            if s.order.count == 1 { return Self.startCurrent(&s, reading: reading != nil) }
            guard case let .waiting(first)? = s.slots[s.order[0]] else { return [] }
            return [.show(waiter.show, "ble: \(waiter.subject) waits to ask: answer the question about \(first.subject) first")]
        }
        perform(effects)
    }

    private func withdraw(_ id: UInt64) {
        let effects = state.withLock { s -> [Effect] in
            switch s.slots[id] {
            case .reserved?:
                s.slots[id] = .cancelled
                return []
            case let .waiting(w)?:
                s.slots[id] = nil
                let wasCurrent = s.order.first == id
                s.order.removeAll { $0 == id }
                var effects: [Effect] = [.resume(w.continuation, .cancelled)]
                if wasCurrent {
                    if !w.lines.isEmpty { effects.append(.show(w.show, "ble: the question about \(w.subject) was withdrawn")) }
                    effects += Self.startCurrent(&s, reading: reading != nil)
                }
                return effects
            case .cancelled?, nil:
                return []
            }
        }
        perform(effects)
    }

    /// The first waiting prompt has just become current: show it, and read if no read is in
    /// flight.
    private static func startCurrent(_ s: inout State, reading canRead: Bool) -> [Effect] {
        guard let id = s.order.first, case let .waiting(w)? = s.slots[id] else { return [] }
        var effects = w.lines.map { Effect.show(w.show, $0) }
        if canRead && !s.reading && !s.ended {
            s.reading = true
            effects.append(.read)
        }
        return effects
    }

    private func perform(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case let .show(show, text): show(text)
            case let .resume(continuation, answer): continuation.resume(returning: answer)
            case .read: startRead()
            }
        }
    }

    private func startRead() {
        guard let reading else { return }
        DispatchQueue.global().async {
            let line = reading()
            self.readEnded(line)
        }
    }

    /// A read came back: its line goes to the current prompt (the next read starts if a
    /// prompt is current after it), or is dropped when none is.
    private func readEnded(_ line: String?) {
        perform(state.withLock { s in
            s.reading = false
            return deliver(line, &s)
        })
    }
}

/// `LinePrompts.line()` was refused: `limit` prompts were waiting already.
public struct LinePromptsFull: Error, CustomStringConvertible {
    /// How many prompts may wait.
    public let limit: Int
    /// Says so.
    public var description: String { "\(limit) questions are waiting for an answer already" }
}

/// One line from stdin, through `LinePrompts.standardInput` (so it waits its turn behind any
/// question already asked, e.g. a pairing's); nil at the end of input. `subject` says what the
/// line answers, for the questions that wait behind it.
///
/// Cancelling the task (Ctrl-C or SIGTERM cancel the command) ends the wait at once with
/// `CancellationError`; the line the blocked read brings later is not this caller's.
public func readLineFromStandardInput(about subject: String = "a line of input") async throws -> String? {
    try await LinePrompts.standardInput.line(about: subject)
}

/// `readLineFromStandardInput()` with a reading of one's own (tests): a `LinePrompts` of its
/// own over `read`, for this one line.
public func readLineFromStandardInput(reading read: @escaping @Sendable () -> String?) async throws -> String? {
    try await LinePrompts(reading: read).line()
}
