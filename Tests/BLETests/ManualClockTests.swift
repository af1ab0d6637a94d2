import BLERuntime
import XCTest

/// `ManualClock.waitForSleepers`: an event when a sleeper comes or goes, not a poll.
final class ManualClockTests: XCTestCase {
    /// A wait for an armed timer ends when the sleeper arrives, with its deadline seen; one for
    /// a condition that never comes ends with false at its bound.
    func testAWaitForSleepersEndsWhenOneArrivesAndAtItsBoundOtherwise() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(until: .seconds(5)) }
        let armed = await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(5) }
        XCTAssertTrue(armed)
        let never = await clock.waitForSleepers(within: .milliseconds(50)) { $0.count == 2 }
        XCTAssertFalse(never)
        clock.advance(by: .seconds(5))
        try await sleeper.value
        let gone = await clock.waitForSleepers(within: .seconds(10)) { $0.isEmpty }
        XCTAssertTrue(gone)
    }

    /// A condition that already holds answers at once.
    func testAConditionThatHoldsAnswersAtOnce() async {
        let clock = ManualClock()
        let empty = await clock.waitForSleepers(within: .seconds(10)) { $0.isEmpty }
        XCTAssertTrue(empty)
    }
}
