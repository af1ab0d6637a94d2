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
