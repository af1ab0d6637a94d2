import CoreBluetooth
import XCTest
import Synchronization

/// `isAdvertising` follows the calls as they were made: a `stopAdvertising()` called before an
/// earlier `startAdvertising(_:)` finished is not undone when that start finishes.
final class AdvertisingStateTests: XCTestCase {
    /// Records each state and each advertising callback with `isAdvertising` as it was then.
    final class Advertiser: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
        private let lock = Mutex(())
        private var lines: [String] = []
        var events: [String] { lock.withLock { _ in lines } }
        private func record(_ line: String) {
            lock.withLock { _ in lines.append(line) }
            TestEvents.happened()
        }

        func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) { record("state \(peripheral.state)") }
        func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
            record("\(error == nil ? "started" : "start error"), isAdvertising \(peripheral.isAdvertising)")
        }
    }

    func testAStopBeforeTheStartFinishedLeavesItStopped() throws {
        let queue = DispatchQueue(label: "cb.advertiser")
        let advertiser = Advertiser()
        let manager = CBPeripheralManager(delegate: advertiser, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("poweredOn") { advertiser.events.contains("state poweredOn") }
        let name = "CBAdv-\(UInt16.random(in: 0...0xFFFF))"

        // Started and finished: advertising.
        manager.startAdvertising([CBAdvertisementDataLocalNameKey: name])
        wait("the first start") { advertiser.events.contains { $0.hasPrefix("started") } }
        XCTAssertEqual(advertiser.events.last, "started, isAdvertising true")
        XCTAssertTrue(manager.isAdvertising)
        manager.stopAdvertising()
        XCTAssertFalse(manager.isAdvertising)

        // Started and stopped at once, on the delegate queue (so no callback runs in between):
        // when the start finishes the stop still holds.
        queue.sync {
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: name])
            manager.stopAdvertising()
        }
        wait("the second start's callback") { advertiser.events.filter { $0.hasPrefix("started") }.count == 2 }
        XCTAssertEqual(advertiser.events.last, "started, isAdvertising false", "\(advertiser.events)")
        XCTAssertFalse(manager.isAdvertising)
    }
}
