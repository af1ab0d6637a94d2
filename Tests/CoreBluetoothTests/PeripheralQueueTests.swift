import CoreBluetooth
import XCTest

/// A peripheral's callbacks run on its manager's queue, also once the app has let the manager go
/// (it keeps the peripheral): never on the main queue instead.
final class PeripheralQueueTests: XCTestCase {
    func testCallbacksStayOnTheManagersQueueAfterTheManagerIsGone() throws {
        let queue = DispatchQueue(label: "cb.orphan")
        let recorder = Recorder(queue: queue)
        let identifier = try XCTUnwrap(UUID(uuidString: "53424C45-0000-8001-8000-C0FFEE000003"))
        weak var released: CBCentralManager?
        var kept: CBPeripheral?
        do {
            let central = CBCentralManager(delegate: recorder, queue: queue, options: CentralRoleTests.options)
            released = central
            wait("poweredOn") { recorder.events.contains("state poweredOn") }
            kept = central.retrievePeripherals(withIdentifiers: [identifier]).first
        }
        wait("the manager is gone") { released == nil }
        let peripheral = try XCTUnwrap(kept)
        peripheral.delegate = recorder
        // Not connected: the read fails with notConnected, through the delegate, on `queue`.
        peripheral.readRSSI()
        wait("the failed read") { recorder.events.contains("rssi error") }
        XCTAssertEqual((recorder.error(for: "rssi error") as? CBError)?.code, .notConnected)
        XCTAssertEqual(recorder.callbacksOffQueue, [])
    }
}
