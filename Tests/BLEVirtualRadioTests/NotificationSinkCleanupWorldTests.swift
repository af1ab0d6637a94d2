@testable import BLE
import BLEVirtual
import XCTest

/// Notification streams an application lets go of are forgotten even when their value never
/// notifies again (client review finding 1): they were dropped only at their own value's next
/// notification, so opening and dropping streams grew the link's list for ever, and every
/// notification of any value scanned it.
final class NotificationSinkCleanupWorldTests: XCTestCase {
    func testStreamsLetGoOfAreForgottenWhenTheNextIsOpened() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Sinks")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Sinks").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (c, _) = try await world.addCentral()
            let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            let kept = await p.notifications(valueHandle: 0x0003)
            for _ in 0..<20 {
                let dropped = await p.notifications(valueHandle: 0x0005)
                _ = dropped
            }
            let last = await p.notifications(valueHandle: 0x0005)
            let count = await p.host.run { [linkID = p.linkID] in $0.client.notificationSinkCount(onLink: linkID, $0) }
            XCTAssertEqual(count, 2, "the kept stream and the last one; the 20 dropped are gone")
            _ = (kept, last)
            await c.close()
            await manager.close()
        }
    }
}
