@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport

/// A peripheral's SMP behind the fake controller, talking to our central on link 0x0040: an SMP
/// machine (the responder) that answers every SMP PDU the host sends and plays the controller
/// for every LE Enable Encryption (the change succeeds when the host gave the machine's key).
/// Driven by `step` (with `FakeController.play`): what the host sent since the last step.
actor ResponderSMPPeer {
    var m: SMPPairing
    private var consumed = 0
    private var encryptions = 0
    /// Pairings the machine completed.
    private(set) var completed = 0
    /// Pairings the machine ended in failure.
    private(set) var failed = 0
    init(_ m: SMPPairing) { self.m = m }

    /// The host asked to encrypt at least once (and was answered).
    var encrypted: Bool { encryptions > 0 }
    /// A pairing ended, completed or failed.
    var finished: Bool { completed + failed > 0 }

    /// Handles whatever the host sent since the last step.
    func step(_ c: FakeController) async {
        let pdus = await c.l2capPayloads(channel: 0x0006)
        while consumed < pdus.count {
            let pdu = pdus[consumed]
            consumed += 1
            await perform(m.receive(pdu, now: .zero), c)
        }
        let commands = await c.commands.filter { $0.opcode == .leEnableEncryption }
        while encryptions < commands.count {
            let enc = commands[encryptions]
            encryptions += 1
            let ltk = Array(enc.parameters[12..<28])
            let ok = m.longTermKeyRequested(ediv: 0, rand: 0) == ltk
            await c.sendNow(.encryptionChange(status: ok ? .success : .pinOrKeyMissing, handle: 0x0040, enabled: ok))
            await perform(m.encryptionChanged(status: ok ? 0 : 6, enabled: ok, now: .zero), c)
        }
    }

    private func perform(_ actions: [SMPAction], _ c: FakeController) async {
        for a in actions {
            switch a {
            case let .send(b): await c.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: b)
            case .completed: completed += 1
            case .failed: failed += 1
            default: break
            }
        }
    }
}
