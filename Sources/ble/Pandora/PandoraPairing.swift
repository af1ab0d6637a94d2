import BLE
import Synchronization

/// What the DUT's user is asked or shown while it pairs, as Pandora's `Security.OnPairing`
/// streams it (pandora/security.proto, `PairingEvent`).
struct PairingQuestion: Sendable {
    enum Kind: String, Sendable {
        case justWorks = "just_works"
        case numericComparison = "numeric_comparison"
        case passkeyEntryRequest = "passkey_entry_request"
        case passkeyEntryNotification = "passkey_entry_notification"
    }
    /// Our number for the question; the answer names it.
    let event: Int
    let kind: Kind
    /// The number compared or shown.
    let value: UInt32?
    /// The connection it is about (its cookie); nil when the link is not one we handed out.
    let connection: UInt64?
}

/// The user's answer to a `PairingQuestion`.
enum PairingAnswer: Sendable {
    case confirm(Bool)
    case passkey(UInt32)
    /// No answer (a passkey request cancelled, a stream that ended): the pairing fails.
    case none
}

/// Carries the pairing agent's questions to whoever streams `OnPairing`, and their answers
/// back. With nobody streaming, Just Works is accepted and every other question refused, as
/// Bumble's Pandora server does.
final class PairingRelay: Sendable {
    private struct State {
        var listener: AsyncStream<PairingQuestion>.Continuation?
        /// Which `listen()` the listener is: only its own `stopListening` ends it.
        var listenerToken = 0
        var waiting: [Int: CheckedContinuation<PairingAnswer, Never>] = [:]
        var nextEvent = 1
        /// Connection address → cookie, kept by the stack as links come and go.
        var cookies: [DeviceAddress: UInt64] = [:]
    }
    private let state = Mutex(State())

    /// The questions from now on, with the token that ends them; nil while another stream listens.
    func listen() -> (token: Int, questions: AsyncStream<PairingQuestion>)? {
        let (stream, continuation) = AsyncStream<PairingQuestion>.makeStream()
        let token = state.withLock { s -> Int? in
            guard s.listener == nil else { return nil }
            s.listener = continuation
            s.listenerToken += 1
            return s.listenerToken
        }
        guard let token else { return nil }
        return (token, stream)
    }

    /// The listener `token` went away: questions still waiting get no answer. A later
    /// listener is left alone.
    func stopListening(_ token: Int) {
        let waiting = state.withLock { s -> [CheckedContinuation<PairingAnswer, Never>] in
            guard s.listener != nil, s.listenerToken == token else { return [] }
            s.listener?.finish()
            s.listener = nil
            defer { s.waiting = [:] }
            return Array(s.waiting.values)
        }
        for w in waiting { w.resume(returning: .none) }
    }

    func register(_ peer: DeviceAddress, cookie: UInt64) { state.withLock { $0.cookies[peer] = cookie } }
    /// Forgets `peer`'s link `cookie`, unless a newer link to it took its place.
    func forget(_ peer: DeviceAddress, cookie: UInt64) {
        state.withLock { s in
            if s.cookies[peer] == cookie { s.cookies[peer] = nil }
        }
    }
    func forgetAll() { state.withLock { $0.cookies = [:] } }

    /// Shows the user something that needs no answer.
    func tell(_ kind: PairingQuestion.Kind, value: UInt32?, peer: DeviceAddress) {
        state.withLock { s in
            guard let listener = s.listener else { return }
            let event = s.nextEvent
            s.nextEvent += 1
            listener.yield(PairingQuestion(event: event, kind: kind, value: value, connection: s.cookies[peer]))
        }
    }

    /// Asks and waits for the answer; a cancelled wait (the pairing ended) is no answer.
    func ask(_ kind: PairingQuestion.Kind, value: UInt32?, peer: DeviceAddress) async -> PairingAnswer {
        let event = state.withLock { s -> Int in
            defer { s.nextEvent += 1 }
            return s.nextEvent
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<PairingAnswer, Never>) in
                let unanswered = state.withLock { s -> PairingAnswer? in
                    guard let listener = s.listener else { return kind == .justWorks ? .confirm(true) : PairingAnswer.none }
                    if Task.isCancelled { return PairingAnswer.none }
                    s.waiting[event] = c
                    listener.yield(PairingQuestion(event: event, kind: kind, value: value, connection: s.cookies[peer]))
                    return nil
                }
                if let unanswered { c.resume(returning: unanswered) }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: event) }?.resume(returning: .none)
        }
    }

    /// Delivers an answer; false when no question `event` waits.
    func answer(_ event: Int, _ answer: PairingAnswer) -> Bool {
        guard let waiting = state.withLock({ $0.waiting.removeValue(forKey: event) }) else { return false }
        waiting.resume(returning: answer)
        return true
    }
}

/// The DUT's pairing agent: every prompt goes to the `OnPairing` stream through the relay.
struct RelayPairingAgent: PairingAgent {
    let relay: PairingRelay

    func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async {
        relay.tell(.passkeyEntryNotification, value: passkey, peer: peer)
    }

    func enterPasskey(for peer: DeviceAddress) async -> UInt32? {
        if case let .passkey(value) = await relay.ask(.passkeyEntryRequest, value: nil, peer: peer) { return value }
        return nil
    }

    func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool {
        if case .confirm(true) = await relay.ask(.numericComparison, value: value, peer: peer) { return true }
        return false
    }

    func confirmJustWorks(for peer: DeviceAddress) async -> Bool {
        if case .confirm(true) = await relay.ask(.justWorks, value: nil, peer: peer) { return true }
        return false
    }

    /// A person (the test's client) compares the numbers.
    var confirmsWithoutAPerson: Bool { false }
}
