import BLECrypto
import BLEHost
import BLEWire
import Synchronization

/// Stateful fuzz target for the Security Manager (Core spec Vol 3 Part H): one machine per
/// role fed any sequence of peer PDUs, user answers, controller encryption events, LTK requests
/// and timer expiries. Invariants: nothing traps; a pairing completes only after the controller
/// reported encryption with the key the machine asked for; every key handed to the controller
/// is 16 octets; a timed-out machine says nothing more; a machine that is not pairing has no
/// deadline.
enum SMPStateFuzzTargets {
    static let entropy: SMPEntropy = {
        let counter = Mutex<UInt64>(0x5EED)
        return SMPEntropy(bytes: { (n) throws(CryptoError) -> [UInt8] in
            counter.withLock { state in
                (0..<n).map { _ in
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    return UInt8(truncatingIfNeeded: state >> 33)
                }
            }
        }, keyPair: { () throws(CryptoError) -> P256KeyPair in try P256.keyPair(privateKey: P256.debugPrivateKey) })
    }()

    static func smpPairing(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let central = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
        let peripheral = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_02), type: .public)
        let io = SMPIOCapability(rawValue: input.u8() % 5)
        var settings = SMPPairingSettings(ioCapability: io, mitm: input.bool(), secureConnections: input.bool())
        settings.acceptsDebugKeys = true // the seeds use the debug key to reach the later phases
        settings.asksApproval = input.bool()
        let identity = SMPLocalIdentity(identityResolvingKey: Array(repeating: 1, count: 16), identityAddress: peripheral,
                                        signatureKey: Array(repeating: 2, count: 16))
        var machines = [
            SMPPairing(role: .initiator, settings: settings, identity: identity, entropy: entropy, initiatorAddress: central, responderAddress: peripheral),
            SMPPairing(role: .responder, settings: settings, identity: identity, entropy: entropy, initiatorAddress: central, responderAddress: peripheral),
        ]
        var now: Duration = .zero
        var encryptedWith: [[UInt8]?] = [nil, nil]
        var asked: [[UInt8]?] = [nil, nil]
        var steps = 0
        while !input.isAtEnd, steps < 256 {
            steps += 1
            let which = Int(input.u8() & 1)
            let wasClosed = machines[which].isClosed
            let actions: [SMPAction]
            switch input.u8() % 9 {
            case 0: actions = machines[which].start(now: now)
            case 1, 2: actions = machines[which].receive(input.chunk(), now: now)
            case 3: actions = machines[which].passkeyEntered(input.bool() ? UInt32(input.u16()) * 16 : nil, now: now)
            case 4: actions = machines[which].numericComparisonConfirmed(input.bool(), now: now)
            case 5: actions = machines[which].approve(input.bool(), now: now)
            case 6:
                let ok = input.bool()
                if ok, machines[which].isPairing {
                    // The controller encrypts with what it was given (the central's request, or the
                    // key the peripheral's host answered with).
                    encryptedWith[which] = which == 0 ? asked[0] : machines[1].longTermKeyRequested(ediv: 0, rand: 0)
                }
                actions = machines[which].encryptionChanged(status: ok ? 0 : 0x3D, enabled: ok, now: now)
            case 7:
                if let key = machines[which].longTermKeyRequested(ediv: input.u16(), rand: 0) {
                    FuzzCheck.require(key.count == 16, "SMP: LTK reply of \(key.count) octets")
                }
                actions = []
            default:
                now += .seconds(Int64(input.u8()))
                actions = machines[which].expire(now: now)
            }
            if wasClosed { FuzzCheck.require(actions.isEmpty || actions.allSatisfy(isUnavailable), "SMP: actions after the SMP timeout: \(actions)") }
            for action in actions {
                switch action {
                case let .startEncryption(ltk, _, _):
                    FuzzCheck.require(ltk.count == 16, "SMP: encryption with a key of \(ltk.count) octets")
                    asked[which] = ltk
                case let .completed(outcome):
                    FuzzCheck.require(encryptedWith[which] == outcome.linkKey, "SMP: completed without encryption by the pairing's key")
                    encryptedWith[which] = nil
                case .send(let pdu):
                    FuzzCheck.require(!pdu.isEmpty, "SMP: empty PDU sent")
                default:
                    break
                }
            }
            FuzzCheck.require(machines[which].isPairing || machines[which].nextDeadline == nil, "SMP: deadline without a pairing")
        }
    }

    private static func isUnavailable(_ a: SMPAction) -> Bool {
        if case .failed(.unavailable) = a { return true }
        return false
    }
}
