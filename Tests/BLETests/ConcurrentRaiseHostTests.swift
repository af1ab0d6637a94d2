@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import Synchronization
import XCTest

/// Two requests refused at once on a central (two tasks reading, an L2CAP open beside a GATT
/// read): each raises. The second finds the link's encryption with the bond's key under way
/// and waits for it, rather than send a second LE Enable Encryption, which a controller refuses
/// (Command Disallowed) and which, taken for the first's failure, would fail both callers and
/// leave the link taken for the least key (7 octets, no bond) when the first's change arrives.
final class ConcurrentRaiseHostTests: XCTestCase {
    let fixture = BondedLinkFixture(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5C), type: .public),
                                    ltk: [UInt8](repeating: 0x5C, count: 16))

    func testTwoRaisesAtOnceOverABondEncryptOnceAndBothSucceed() async throws {
        let t = HostUnderTest()
        // A controller refuses LE Enable Encryption while an encryption start is in progress.
        let sent = Mutex(0)
        await t.controller.set(.leEnableEncryption) { c in
            let n = sent.withLock { $0 += 1; return $0 }
            return [.commandStatus(status: n == 1 ? .success : .commandDisallowed, numHCICommandPackets: 1, opcode: c.opcode)]
        }
        let (central, p) = try await fixture.connectedCentral(t)
        let id = p.linkID
        let raise = { @Sendable () async -> Error? in
            do {
                try await p.host.run { try await $0.security.raise(for: .insufficientEncryption, linkID: id, $0) }
                return nil
            } catch { return error }
        }
        let first = Task { await raise() }
        _ = try await t.controller.waitForCommand(.leEnableEncryption, within: .seconds(5))
        let second = Task { await raise() }
        // The second raise has either joined the first (two callers waiting on one encryption)
        // or sent its own LE Enable Encryption, whose refusal failed both.
        let settled = await waitUntil("the second raise joined, or its own encryption refused", within: .seconds(10)) {
            let commands = await t.controller.commands.filter { $0.opcode == .leEnableEncryption }.count
            let waiting = await p.host.run { $0.security.encryptionWaiters[0x0040]?.count ?? 0 }
            return waiting == 2 || (commands >= 2 && waiting == 0)
        }
        XCTAssertTrue(settled)
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0040, enabled: true))
        let e1 = await first.value
        let e2 = await second.value
        XCTAssertNil(e1, "the first raise failed: \(String(describing: e1))")
        XCTAssertNil(e2, "the second raise failed: \(String(describing: e2))")
        let state = await p.host.run { $0.connections.links[0x0040].map { ($0.security.keySize, $0.encryptedWithBondKey) } }
        XCTAssertEqual(state?.0, 16, "the link encrypted with the bond's 16-octet key is taken for a 7-octet one")
        XCTAssertEqual(state?.1, true, "the link encrypted with the bond's key does not speak for the bond (CCCDs not restored)")
        await central.close()
    }
}
