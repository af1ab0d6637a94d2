import BLEGateway
import XCTest

/// `AdvertisementThrottle` on a clock the test sets (`now:` is a plain `Duration`): when a
/// device's report is published at once, held back, republished, forgotten or evicted.
final class AdvertisementThrottleTests: XCTestCase {
    typealias Throttle = AdvertisementThrottle<String>

    /// The defaults, spelled out so the times below read against them: interval 2 s, RSSI step
    /// 6 dB, refresh 60 s, forget 120 s.
    private func throttle(maximumDevices: Int = 2000) -> Throttle {
        var s = Throttle.Settings()
        s.interval = .seconds(2)
        s.rssiStep = 6
        s.refresh = .seconds(60)
        s.forget = .seconds(120)
        s.maximumDevices = maximumDevices
        return Throttle(settings: s)
    }

    private func at(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    func testTheSettingsDefaultToTheDocumentedValues() {
        let s = Throttle.Settings()
        XCTAssertEqual(s.interval, .seconds(2))
        XCTAssertEqual(s.rssiStep, 6)
        XCTAssertEqual(s.refresh, .seconds(60))
        XCTAssertEqual(s.forget, .seconds(120))
        XCTAssertEqual(s.maximumDevices, 2000)
    }

    func testADeviceHeardForTheFirstTimeIsPublishedAtOnce() {
        var t = throttle()
        let first = t.heard("A", signature: 1, rssi: -60, now: at(0))
        XCTAssertTrue(first.publish)
        XCTAssertEqual(first.evicted, [])
        XCTAssertTrue(t.heard("B", signature: 1, rssi: -60, now: at(0.1)).publish)
        XCTAssertEqual(t.count, 2)
    }

    func testAnUnchangedDeviceIsNotRepublishedWithinTheRefresh() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        for s in [0.5, 2, 3, 30, 59.999] {
            XCTAssertFalse(t.heard("A", signature: 1, rssi: -60, now: at(s)).publish, "at \(s) s")
        }
        XCTAssertEqual(t.due(now: at(59.999)), [])
    }

    func testAChangeAfterTheIntervalIsPublishedAtOnce() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertTrue(t.heard("A", signature: 2, rssi: -60, now: at(2)).publish)
        XCTAssertFalse(t.heard("A", signature: 2, rssi: -60, now: at(5)).publish)
    }

    func testAChangeWithinTheIntervalIsHeldUntilItHasPassed() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 2, rssi: -60, now: at(0.5)).publish)
        XCTAssertFalse(t.heard("A", signature: 3, rssi: -60, now: at(1)).publish)
        XCTAssertEqual(t.due(now: at(1.999)), [])
        XCTAssertEqual(t.due(now: at(2)), ["A"])
        XCTAssertEqual(t.due(now: at(2.5)), [], "released once")
        // Released at 2 s with signature 3: the same again is no change, and the next change
        // waits for the interval from the release.
        XCTAssertFalse(t.heard("A", signature: 3, rssi: -60, now: at(2.5)).publish)
        XCTAssertFalse(t.heard("A", signature: 4, rssi: -60, now: at(3)).publish)
        XCTAssertEqual(t.due(now: at(3.999)), [])
        XCTAssertEqual(t.due(now: at(4)), ["A"])
    }

    /// A held change goes out with the first report after the interval, if that comes before
    /// `due`; it is then no longer due.
    func testAHeldChangeIsPublishedByTheNextReportAfterTheInterval() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 2, rssi: -60, now: at(1)).publish)
        XCTAssertTrue(t.heard("A", signature: 2, rssi: -60, now: at(2.5)).publish)
        XCTAssertEqual(t.due(now: at(5)), [])
    }

    func testAnRSSIMoveBelowTheStepIsNotPublishedAndOneAtTheStepIs() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -65, now: at(5)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -55, now: at(10)).publish)
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -66, now: at(15)).publish, "6 dB from the published -60")
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -61, now: at(20)).publish, "5 dB from the published -66")
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -72, now: at(25)).publish)
        XCTAssertEqual(t.due(now: at(40)), [])
    }

    func testTheRefreshRepublishesAnUnchangedDevice() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -60, now: at(59.9)).publish)
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(60)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -60, now: at(61)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -60, now: at(119.9)).publish)
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(120)).publish)
    }

    func testADeviceNotHeardForForgetIsForgottenAndThenNew() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -60, now: at(10)).publish)
        XCTAssertTrue(t.heard("B", signature: 1, rssi: -60, now: at(100)).publish)
        XCTAssertEqual(t.expired(now: at(129.999)), [])
        XCTAssertEqual(t.expired(now: at(130)), ["A"])
        XCTAssertEqual(t.count, 1)
        XCTAssertEqual(t.expired(now: at(131)), [], "forgotten once")
        // Heard again within what would have been its refresh: a new device, published at once.
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(131)).publish)
        XCTAssertEqual(t.expired(now: at(220)), ["B"])
        XCTAssertEqual(t.count, 1)
    }

    func testPastMaximumDevicesTheLeastRecentlyHeardIsEvicted() {
        var t = throttle(maximumDevices: 3)
        XCTAssertEqual(t.heard("A", signature: 1, rssi: -60, now: at(0)).evicted, [])
        XCTAssertEqual(t.heard("B", signature: 1, rssi: -60, now: at(1)).evicted, [])
        XCTAssertEqual(t.heard("C", signature: 1, rssi: -60, now: at(2)).evicted, [])
        XCTAssertEqual(t.heard("A", signature: 1, rssi: -60, now: at(3)).evicted, [], "a known device evicts nothing")
        let d = t.heard("D", signature: 1, rssi: -60, now: at(4))
        XCTAssertTrue(d.publish)
        XCTAssertEqual(d.evicted, ["B"])
        XCTAssertEqual(t.count, 3)
        let b = t.heard("B", signature: 1, rssi: -60, now: at(5))
        XCTAssertTrue(b.publish, "an evicted device is new again")
        XCTAssertEqual(b.evicted, ["C"])
        XCTAssertEqual(t.count, 3)
    }

    /// After `due` released a held RSSI move, the RSSI published is the one the next reports are
    /// measured from ("moved by rssiStep dB or more since the last publication"): a device that
    /// stays at its new RSSI is not republished every interval.
    func testAReleasedRSSIMoveIsTheNewBaseline() {
        var t = throttle()
        XCTAssertTrue(t.heard("A", signature: 1, rssi: -60, now: at(0)).publish)
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -70, now: at(1)).publish)
        XCTAssertEqual(t.due(now: at(2)), ["A"], "the move to -70 goes out")
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -70, now: at(3)).publish)
        XCTAssertEqual(t.due(now: at(5)), [], "-70 again is no move from the -70 published at 2 s")
        XCTAssertFalse(t.heard("A", signature: 1, rssi: -70, now: at(6)).publish)
    }
}
