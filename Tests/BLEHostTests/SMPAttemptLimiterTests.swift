import XCTest
import BLEWire
@testable import BLEHost

/// Repeated Attempts (Core spec Vol 3 Part H §2.3.6), per peer and across made-up addresses.
final class SMPAttemptLimiterTests: XCTestCase {
    func peer(_ n: UInt64) -> DeviceAddress { DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_00 | n), type: .random) }

    func testTheWaitDoublesPerPeerAndASuccessEndsIt() {
        var l = SMPAttemptLimiter(initialInterval: .seconds(2), maximumInterval: .seconds(64))
        l.globalAllowance = 100
        l.failed(peer(1), reason: .confirmValueFailed, now: .zero)
        XCTAssertFalse(l.mayPair(peer(1), now: .seconds(1)))
        XCTAssertTrue(l.mayPair(peer(1), now: .seconds(2)))
        l.failed(peer(1), reason: .confirmValueFailed, now: .seconds(2))
        XCTAssertFalse(l.mayPair(peer(1), now: .seconds(5)))
        XCTAssertTrue(l.mayPair(peer(1), now: .seconds(6)))
        XCTAssertTrue(l.mayPair(peer(2), now: .seconds(3)), "another peer is not held up")
        l.succeeded(peer(1))
        XCTAssertTrue(l.mayPair(peer(1), now: .seconds(6)))
        // Failures that are not wrong guesses do not count.
        l.failed(peer(3), reason: .pairingNotSupported, now: .zero)
        XCTAssertTrue(l.mayPair(peer(3), now: .zero))
    }

    /// Review finding: a central that changes its address for every guess still waits.
    func testANewAddressForEveryGuessStillWaitsAfterAFew() {
        var l = SMPAttemptLimiter(initialInterval: .seconds(2), maximumInterval: .seconds(64))
        for n in UInt64(1)...3 { l.failed(peer(n), reason: .confirmValueFailed, now: .zero) }
        XCTAssertFalse(l.mayPair(peer(99), now: .seconds(1)), "a fresh address is held back too")
        XCTAssertTrue(l.mayPair(peer(99), now: .seconds(2)))
        l.failed(peer(4), reason: .confirmValueFailed, now: .seconds(2))
        XCTAssertFalse(l.mayPair(peer(100), now: .seconds(5)), "the global wait doubles")
        XCTAssertTrue(l.mayPair(peer(100), now: .seconds(6)))
    }

    func testTheTableIsBounded() {
        var l = SMPAttemptLimiter(capacity: 16)
        l.globalAllowance = .max
        for n in 1...1000 { l.failed(peer(UInt64(n)), reason: .passkeyEntryFailed, now: .seconds(Int64(n))) }
        let waiting = (1...1000).filter { l.waitingUntil(peer(UInt64($0))) != nil }.count
        XCTAssertLessThanOrEqual(waiting, 17)
    }

    /// Review finding: reported failures are free to send, so three made-up Pairing Failed
    /// reports from three addresses must not make every other peer wait.
    func testFailuresAPeerOnlyReportsDoNotHoldOthersBack() {
        var l = SMPAttemptLimiter(initialInterval: .seconds(2), maximumInterval: .seconds(64))
        for n in UInt64(1)...3 { l.failed(peer(n), reason: .confirmValueFailed, local: false, now: .zero) }
        XCTAssertTrue(l.mayPair(peer(4), now: .seconds(1)), "a fourth address may pair")
        XCTAssertFalse(l.mayPair(peer(1), now: .seconds(1)), "the reporting peer itself waits")
    }

    /// Review finding: one success (a Just Works pairing anyone can make) does not wipe the
    /// global back-off; it lapses after a quiet `globalMemory`.
    func testASuccessDoesNotClearTheGlobalBackOffButTimeDoes() {
        var l = SMPAttemptLimiter(initialInterval: .seconds(2), maximumInterval: .seconds(64))
        for n in UInt64(1)...3 { l.failed(peer(n), reason: .confirmValueFailed, now: .zero) }
        l.succeeded(peer(50))
        XCTAssertFalse(l.mayPair(peer(99), now: .seconds(1)))
        l.failed(peer(5), reason: .confirmValueFailed, now: .seconds(2))
        XCTAssertFalse(l.mayPair(peer(99), now: .seconds(5)), "the count went on: a doubled wait")
        // After five quiet minutes a failure starts the count again: no global wait for one.
        l.failed(peer(6), reason: .confirmValueFailed, now: .seconds(400))
        XCTAssertTrue(l.mayPair(peer(99), now: .seconds(400)))
    }
}
