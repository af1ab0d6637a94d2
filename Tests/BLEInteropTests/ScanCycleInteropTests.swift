import BLE
import Foundation
import XCTest

/// `Central.scan(cycle:)` on rootcanal against a Bumble extended advertiser: the controller
/// takes LE Set Extended Scan Enable with a Duration and a Period (Vol 4 Part E §7.8.65) and the
/// scan delivers the advertiser. rootcanal 1.10 checks the parameters (a duration not shorter
/// than its period is refused, as `ExtendedAdvertisingWorldTests` also shows for the virtual
/// radio) but goes on reporting between durations: that the controller rests then is shown on
/// the virtual radio (`testAScanCycleListensOnlyAtTheStartOfEachPeriod`).
final class ScanCycleInteropTests: XCTestCase {
    func testRootcanalTakesACycledScanAndItDeliversTheAdvertiser() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("extended_advertiser.py", arguments: ["--name", "CYC", "--sid", "4", "--length", "40"], environment: env)
        let data = try XCTUnwrap(try peer.waitForEvent("advertising").string("data"))
        let central = try await Central.open(spec: env.rootcanal)
        var heard: ScannedDevice?
        for try await device in central.scan(active: false, timeout: .seconds(6),
                                             cycle: ScanCycle(duration: .milliseconds(300), period: .milliseconds(1280)))
        where device.address.address.description == peer.address.description {
            heard = device
            break
        }
        await central.close()
        let device = try XCTUnwrap(heard, "the advertiser was not heard through a cycled scan")
        XCTAssertEqual(device.extended?.advertisingSID, 4)
        XCTAssertEqual(device.advertisement.structures.flatMap { [UInt8(1 + $0.data.count), $0.type.rawValue] + $0.data }
                           .map { String(format: "%02x", $0) }.joined(), data)
    }
}
