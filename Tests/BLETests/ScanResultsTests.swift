@testable import BLE
import BLEHost
import BLEWire
import XCTest

/// The buffer between the host and a scan's consumer (`ScanResults`): the policy
/// `AsyncThrowingStream`'s `.bufferingNewest(4096)` had, batches taken whole, the end after
/// what was buffered, and the consumer going away ending the scan. No clock involved.
final class ScanResultsTests: XCTestCase {
    func device(_ n: UInt64) -> ScannedDevice {
        ScannedDevice(address: DeviceAddress(BDAddress(rawValue: 0xC000_0000_0000 | n), type: .random),
                      advertisement: AdvertisingData(), rssi: -40, isConnectable: false,
                      lastSeen: .zero, firstSeen: .zero, hasScanResponse: false)
    }

    struct Failure: Error {}

    func testAConsumerThatFallsBehindLosesTheOldest() async throws {
        let buffer = ScanBuffer(limit: 3)
        for n in 0..<5 { buffer.push(device(UInt64(n))) }
        buffer.close()
        var seen: [UInt64] = []
        for try await d in ScanResults(buffer: buffer) { seen.append(d.address.address.rawValue & 0xFF) }
        XCTAssertEqual(seen, [2, 3, 4])
    }

    func testBufferedDevicesComeBeforeTheErrorThatEndedTheScan() async {
        let buffer = ScanBuffer()
        buffer.push(device(1))
        buffer.push(device(2))
        buffer.close(error: Failure())
        buffer.push(device(3))
        var seen = 0
        do {
            for try await _ in ScanResults(buffer: buffer) { seen += 1 }
            XCTFail("no error")
        } catch {
            XCTAssertTrue(error is Failure)
        }
        XCTAssertEqual(seen, 2, "nothing after the end")
    }

    func testLeavingTheLoopEndsTheScan() async throws {
        let buffer = ScanBuffer()
        let ended = expectation(description: "terminated")
        buffer.onTermination { ended.fulfill() }
        buffer.push(device(1))
        buffer.push(device(2))
        do {
            let results = ScanResults(buffer: buffer)
            for try await _ in results { break }
        }
        await fulfillment(of: [ended], timeout: 10)
        // A handler given after the end (a scan whose start finished late) runs at once.
        let late = expectation(description: "late handler")
        buffer.onTermination { late.fulfill() }
        await fulfillment(of: [late], timeout: 10)
    }

    func testCancellingTheConsumerEndsTheScan() async throws {
        let buffer = ScanBuffer()
        let ended = expectation(description: "terminated")
        buffer.onTermination { ended.fulfill() }
        let results = ScanResults(buffer: buffer)
        let consumer = Task { () -> Int in
            var n = 0
            for try await _ in results { n += 1 }
            return n
        }
        buffer.push(device(1))
        consumer.cancel()
        await fulfillment(of: [ended], timeout: 10)
        let n = try await consumer.value
        XCTAssertLessThanOrEqual(n, 1)
    }
}
