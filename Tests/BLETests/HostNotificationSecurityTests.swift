@testable import BLE
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import BLETestSupport
import XCTest

/// Through the host: `updateValue` sends a value only to a central whose link's current
/// security could read it, so no one gets by notification what they could not read.
final class HostNotificationSecurityTests: XCTestCase {
    let central = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_09), type: .random)

    /// A `.readAuthorized` value: its CCCD cannot be written before the central is authorized;
    /// once authorization is withdrawn, the subscription made meanwhile gets nothing.
    func testAuthorizedValueGoesOnlyToAnAuthorizedCentral() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let m = try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(BDAddress(rawValue: 0xC1_02_03_04_05_06)))
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.readAuthorized], value: [0x42]),
        ]))
        let c = try XCTUnwrap(handles.characteristics.first)
        let cccd = try XCTUnwrap(c.cccdHandle)
        await t.centralConnects(from: central, handle: 0x0041)
        await m.waitForConnectedCentrals(1)
        let centrals = await m.connectedCentrals
        let connected = try XCTUnwrap(centrals.first)
        @Sendable func pdus() async -> [[UInt8]] { await t.controller.l2capPayloads(channel: 0x0004) }
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }
        let subscribe: [UInt8] = [0x12] + le(cccd) + [0x01, 0x00]

        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: subscribe)
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 1 }
        let refused = await pdus()[0]
        XCTAssertEqual(refused, [0x01, 0x12] + le(cccd) + [0x08], "CCCD write: Insufficient Authorization")
        let nobody = await m.updateValue([0x43], forHandle: c.valueHandle)
        XCTAssertEqual(nobody, .queued(centrals: 0))

        await m.authorize(connected)
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: subscribe)
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 2 }
        let subscribed = await pdus()[1]
        XCTAssertEqual(subscribed, [0x13])
        let sent = await m.updateValue([0x44], forHandle: c.valueHandle)
        XCTAssertEqual(sent, .queued(centrals: 1))
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 3 }
        let notified = await pdus()[2]
        XCTAssertEqual(notified, [0x1B] + le(c.valueHandle) + [0x44])

        await m.authorize(connected, false)
        let withdrawn = await m.updateValue([0x45], forHandle: c.valueHandle)
        XCTAssertEqual(withdrawn, .queued(centrals: 0), "the CCCD is still set, but the link could not read the value")
        // A read answered after the update: had a notification been queued, it would come first.
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x0A] + le(c.valueHandle))
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count >= 4 }
        let after = await pdus()
        XCTAssertEqual(after.count, 4)
        XCTAssertEqual(after.last, [0x01, 0x0A] + le(c.valueHandle) + [0x08], "read: Insufficient Authorization, and no notification before it")
        await m.close()
    }
}
