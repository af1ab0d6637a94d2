import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// LE Connection Update Complete goes to the central whenever its host sent LE Connection
/// Update, and to the peripheral only when a parameter changed (Core spec Vol 4 Part E
/// §7.7.65.3).
final class ConnectionUpdateEventTests: XCTestCase {
    func updates(_ deliveries: [VirtualMedium.Delivery]) -> [VirtualMedium.ControllerID] {
        deliveries.compactMap { d in
            if case .event(.le(.connectionUpdateComplete)) = d.packet { return d.to }
            return nil
        }
    }

    func testThePeripheralHearsOnlyOfAChange() throws {
        var two = TwoControllerMedium()
        let h = try two.connect()
        // The link runs at interval 24, latency 0, timeout 400: the same again changes nothing.
        let same = two.medium.receive(.leConnectionUpdate(handle: h.central, intervalMin: 24, intervalMax: 24, maxLatency: 0, supervisionTimeout: 400),
                                      from: two.central, now: .zero)
        XCTAssertEqual(updates(same), [two.central], "the central only")
        let changed = two.medium.receive(.leConnectionUpdate(handle: h.central, intervalMin: 30, intervalMax: 30, maxLatency: 0, supervisionTimeout: 400),
                                         from: two.central, now: .zero)
        XCTAssertEqual(Set(updates(changed)), [two.central, two.peripheral], "both, once the interval changed")
    }
}
