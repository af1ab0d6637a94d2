import Synchronization
import XCTest
@testable import BLESystems

/// The gateway's bounds on what a command publisher can make it hold or print.
final class GatewayIntakeTests: XCTestCase {
    func testCommandsBeyondTheBoundAreDroppedAndCounted() {
        let intake = GatewayIntake(limit: 3)
        XCTAssertEqual((0..<5).map { _ in intake.admit() }, [true, true, true, false, false])
        XCTAssertEqual(intake.dropped, 2)
        intake.taken()
        XCTAssertTrue(intake.admit())
        XCTAssertFalse(intake.admit())
        XCTAssertEqual(intake.dropped, 3)
    }

    func testTheLogLimiterHoldsBackAFloodAndSaysHowMuch() {
        var limiter = GatewayLogLimiter()
        limiter.perWindow = 2
        limiter.window = .seconds(10)
        XCTAssertTrue(limiter.allow(now: .seconds(0)).0)
        XCTAssertTrue(limiter.allow(now: .seconds(1)).0)
        XCTAssertFalse(limiter.allow(now: .seconds(2)).0)
        XCTAssertFalse(limiter.allow(now: .seconds(3)).0)
        let next = limiter.allow(now: .seconds(11))
        XCTAssertTrue(next.0)
        XCTAssertEqual(next.1, 2, "the two held back are told with the next line")
    }
}

/// A command's answer comes once: from the work or from its deadline, whichever is first.
final class GatewayCommandOutcomeTests: XCTestCase {
    func testTheFirstAnswerWinsAndTheTimerIsStopped() async {
        let outcome = GatewayCommandOutcome()
        let stopped = Mutex(0)
        let result = await withCheckedContinuation { c in
            outcome.wait(c)
            outcome.onFinish { stopped.withLock { $0 += 1 } }
            outcome.finish(.failure(GatewayFailure(code: "timeout", "late")))
            outcome.finish(.success([("ok", .bool(true))]))
        }
        guard case let .failure(f) = result else { return XCTFail("the deadline came first: \(result)") }
        XCTAssertEqual(f.code, "timeout")
        XCTAssertEqual(stopped.withLock { $0 }, 1, "the finish action runs once")
        // Registered after the answer: run at once.
        outcome.onFinish { stopped.withLock { $0 += 1 } }
        XCTAssertEqual(stopped.withLock { $0 }, 2)
    }
}
