import BLECrypto
import BLEWire
@testable import BLEHost

/// Two Security Managers wired back to back, as two hosts over one link would be: each PDU one
/// sends is handed to the other, the users answer prompts as scripted, and a simulated
/// controller pair encrypts the link — succeeding only when both ends hold the same key, as the
/// virtual radio does (a mismatch is a MIC failure, HCI status 0x3D).
struct SMPPairingHarness {
    /// What a user does when asked.
    struct User {
        /// The passkey typed when asked; nil: type the one the other side displays.
        var typedPasskey: UInt32?
        /// Whether the numbers match when asked to compare.
        var confirms = true
        /// Answer to a pairing approval.
        var approves = true
        /// Answer when asked to accept Just Works.
        var acceptsJustWorks = true
        /// Never answers (the pairing must time out).
        var silent = false
    }

    var initiator: SMPPairing
    var responder: SMPPairing
    var initiatorUser = User()
    var responderUser = User()
    var now: Duration = .zero

    private(set) var initiatorOutcome: Result<SMPPairingOutcome, SMPPairingError>?
    private(set) var responderOutcome: Result<SMPPairingOutcome, SMPPairingError>?
    /// Every PDU that crossed the link, with its sender.
    private(set) var transcript: [(from: SMPPairing.Role, pdu: [UInt8])] = []
    private(set) var displayed: [SMPPairing.Role: UInt32] = [:]
    private(set) var compared: [SMPPairing.Role: UInt32] = [:]
    /// The sides whose user was asked to accept Just Works.
    private(set) var askedJustWorks: Set<SMPPairing.Role> = []
    /// The keys each end gave its controller.
    private(set) var controllerKeys: [SMPPairing.Role: [UInt8]] = [:]
    /// Drops PDUs from this side when set (a peer that stops mid-pairing).
    var muteAfter: (role: SMPPairing.Role, count: Int)?
    /// The peripheral's controller reports encryption first and its keys reach the central
    /// before the central's own Encryption Change event (events and data travel apart over HCI).
    var keysBeforeCentralEncryptionChange = false
    /// Rewrites a PDU in flight (a forged public key, a tampered confirm).
    var tamper: (@Sendable (SMPPairing.Role, [UInt8]) -> [UInt8])?

    /// What two users with keyboards type when neither device displays.
    static let agreedPasskey: UInt32 = 123_456

    static let centralAddress = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    static let peripheralAddress = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_02), type: .public)

    static func identity(_ seed: UInt8, address: DeviceAddress) -> SMPLocalIdentity {
        SMPLocalIdentity(identityResolvingKey: Array(repeating: seed, count: 16), identityAddress: address,
                         signatureKey: Array(repeating: seed &+ 1, count: 16))
    }

    init(initiator: SMPPairingSettings, responder: SMPPairingSettings,
         initiatorOOB: SMPOutOfBandData = SMPOutOfBandData(), responderOOB: SMPOutOfBandData = SMPOutOfBandData()) {
        self.initiator = SMPPairing(role: .initiator, settings: initiator,
                                    identity: Self.identity(0x11, address: DeviceAddress(BDAddress(rawValue: 0xC1_11_11_11_11_11), type: .random)),
                                    outOfBand: initiatorOOB,
                                    initiatorAddress: Self.centralAddress, responderAddress: Self.peripheralAddress)
        self.responder = SMPPairing(role: .responder, settings: responder,
                                    identity: Self.identity(0x22, address: Self.peripheralAddress), outOfBand: responderOOB,
                                    initiatorAddress: Self.centralAddress, responderAddress: Self.peripheralAddress)
    }

    /// Starts pairing from the central and runs until both sides stop.
    mutating func run() {
        let t0 = now
        var queue: [(SMPPairing.Role, SMPAction)] = initiator.start(now: t0).map { (.initiator, $0) }
        var sent: [SMPPairing.Role: Int] = [:]
        var steps = 0
        while !queue.isEmpty, steps < 10_000 {
            steps += 1
            let (role, action) = queue.removeFirst()
            switch action {
            case var .send(pdu):
                sent[role, default: 0] += 1
                if let mute = muteAfter, mute.role == role, sent[role, default: 0] > mute.count { continue }
                if let tamper { pdu = tamper(role, pdu) }
                transcript.append((role, pdu))
                let peer = other(role)
                queue += deliver(peer, .pdu(pdu)).map { (peer, $0) }
            case let .displayPasskey(value):
                displayed[role] = value
                // The other side's user may have been waiting for this number.
                let peer = other(role)
                if pendingPasskey[peer] == true, !user(peer).silent {
                    pendingPasskey[peer] = false
                    let typed = user(peer).typedPasskey ?? value
                    queue += deliver(peer, .passkey(typed)).map { (peer, $0) }
                }
            case .requestPasskey:
                guard !user(role).silent else { continue }
                if let typed = user(role).typedPasskey {
                    queue += deliver(role, .passkey(typed)).map { (role, $0) }
                } else if let shown = displayed[other(role)] {
                    queue += deliver(role, .passkey(shown)).map { (role, $0) }
                } else if pendingPasskey[other(role)] == true {
                    // Both sides type (KeyboardOnly on both): the users agree on a number.
                    pendingPasskey[other(role)] = false
                    queue += deliver(role, .passkey(Self.agreedPasskey)).map { (role, $0) }
                    queue += deliver(other(role), .passkey(Self.agreedPasskey)).map { (other(role), $0) }
                } else {
                    pendingPasskey[role] = true
                }
            case let .confirmNumericComparison(value):
                compared[role] = value
                guard !user(role).silent else { continue }
                let answer = user(role).confirms
                queue += deliver(role, .compare(answer)).map { (role, $0) }
            case .confirmJustWorks:
                askedJustWorks.insert(role)
                guard !user(role).silent else { continue }
                queue += deliver(role, .justWorks(user(role).acceptsJustWorks)).map { (role, $0) }
            case .requestApproval:
                guard !user(role).silent else { continue }
                let answer = user(role).approves
                queue += deliver(role, .approve(answer)).map { (role, $0) }
            case let .startEncryption(ltk, ediv, rand):
                // The central's controller sends LL_ENC_REQ; the peripheral's host is asked for its key.
                controllerKeys[.initiator] = ltk
                let peripheralKey = responder.longTermKeyRequested(ediv: ediv, rand: rand)
                controllerKeys[.responder] = peripheralKey
                let ok = peripheralKey == ltk
                let status: UInt8 = ok ? 0 : (peripheralKey == nil ? 0x06 : 0x3D)
                let t = now
                if keysBeforeCentralEncryptionChange {
                    var early: [SMPAction] = []
                    for action in responder.encryptionChanged(status: status, enabled: ok, now: t) {
                        guard case let .send(pdu) = action else { queue.append((.responder, action)); continue }
                        transcript.append((.responder, pdu))
                        early += deliver(.initiator, .pdu(pdu))
                    }
                    queue += early.map { (.initiator, $0) }
                    queue += initiator.encryptionChanged(status: status, enabled: ok, now: t).map { (.initiator, $0) }
                } else {
                    queue += initiator.encryptionChanged(status: status, enabled: ok, now: t).map { (.initiator, $0) }
                    queue += responder.encryptionChanged(status: status, enabled: ok, now: t).map { (.responder, $0) }
                }
            case let .completed(outcome):
                setOutcome(role, .success(outcome))
            case let .failed(error):
                setOutcome(role, .failure(error))
            case .securityRequested:
                break
            }
        }
    }

    /// Moves time on and fires both SMP timers.
    mutating func advance(by duration: Duration) {
        now += duration
        let t = now
        for action in initiator.expire(now: t) { if case let .failed(e) = action { setOutcome(.initiator, .failure(e)) } }
        for action in responder.expire(now: t) { if case let .failed(e) = action { setOutcome(.responder, .failure(e)) } }
    }

    private var pendingPasskey: [SMPPairing.Role: Bool] = [:]

    private func other(_ role: SMPPairing.Role) -> SMPPairing.Role { role == .initiator ? .responder : .initiator }
    private func user(_ role: SMPPairing.Role) -> User { role == .initiator ? initiatorUser : responderUser }

    private enum Input { case pdu([UInt8]), passkey(UInt32), compare(Bool), approve(Bool), justWorks(Bool) }

    private mutating func deliver(_ role: SMPPairing.Role, _ input: Input) -> [SMPAction] {
        let t = now
        func apply(_ m: inout SMPPairing) -> [SMPAction] {
            switch input {
            case let .pdu(bytes): return m.receive(bytes, now: t)
            case let .passkey(v): return m.passkeyEntered(v, now: t)
            case let .compare(ok): return m.numericComparisonConfirmed(ok, now: t)
            case let .approve(ok): return m.approve(ok, now: t)
            case let .justWorks(ok): return m.justWorksConfirmed(ok, now: t)
            }
        }
        return role == .initiator ? apply(&initiator) : apply(&responder)
    }

    private mutating func setOutcome(_ role: SMPPairing.Role, _ r: Result<SMPPairingOutcome, SMPPairingError>) {
        // The first outcome counts: what a straggler PDU causes afterwards is not the pairing's.
        if role == .initiator { initiatorOutcome = initiatorOutcome ?? r } else { responderOutcome = responderOutcome ?? r }
    }
}
