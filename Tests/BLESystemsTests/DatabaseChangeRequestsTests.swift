import XCTest
@testable import BLESystems

/// The queue of `ble serve test`'s database changes is bounded: a central's Write Commands of
/// `db-change` arrive faster than the database changes, and must not grow the process without
/// bound. What does not fit is dropped, counted, and reported once.
final class DatabaseChangeRequestsTests: XCTestCase {
    func testRequestsPastTheLimitAreDroppedAndCountedOnce() async {
        let requests = DatabaseChangeRequests()
        let accepted = (0..<(DatabaseChangeRequests.limit + 5)).map { _ in requests.request(.signal("SIGUSR1")) }
        XCTAssertEqual(accepted, Array(repeating: true, count: DatabaseChangeRequests.limit) + Array(repeating: false, count: 5))
        XCTAssertEqual(requests.takeDropped(), 5)
        XCTAssertEqual(requests.takeDropped(), 0)
        // The ones kept are there for the reader, in order, and room opens again as it takes them.
        var iterator = requests.requests.makeAsyncIterator()
        let first = await iterator.next()
        XCTAssertEqual(first, .signal("SIGUSR1"))
        XCTAssertTrue(requests.request(.signal("SIGUSR2")))
        XCTAssertFalse(requests.request(.signal("SIGUSR2")))
        XCTAssertEqual(requests.takeDropped(), 1)
    }
}
