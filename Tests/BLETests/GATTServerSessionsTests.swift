@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `GATTServerSessions` on its own, driven by a `GATTServerDriver` double instead of a host:
/// requests answered on the bearer they came on, and a notification's bytes through the ACL
/// flow as the controller would get them.
final class GATTServerSessionsTests: XCTestCase {
    actor Driver: GATTServerDriver, LinkTableDouble, RecordingDriver {
        let server = GATTServerSessions(offersEnhancedATT: false)
        nonisolated let clock: any BLEClock = SystemClock()
        var record = DriverRecord()
        var links = LinkTable()
        var tokens: UInt64 = 0
        /// ATT PDUs sent with `sendATT`, and ACL packets the drain sent, as sent.
        var att: [[UInt8]] = []
        var acl: [[UInt8]] = []
        var aclFlow = ACLFlowController(bufferCount: 4, bufferLength: 27)
        var bonds: [DeviceAddress: Bond] = [:]

        func makeToken() -> UInt64 { tokens += 1; return tokens }
        func sendATT(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) -> Bool {
            guard links.contains(handle) else { return false }
            att.append(pdu)
            return true
        }
        func queuedATTSDUs(handle: UInt16, bearer: ATTBearerID) -> Int { 0 }
        func queuedACLPDUs(handle: UInt16) -> Int { aclFlow.queuedPDUsInPlace(handle: handle) }
        func withACLFlow<R>(_ body: (inout ACLFlowController, ([UInt8]) -> Void) -> R) -> R {
            var sent: [[UInt8]] = []
            let r = body(&aclFlow) { sent.append($0) }
            acl += sent
            return r
        }
        func disconnectInBackground(handle: UInt16, _ why: String) {}
        func closeATTBearer(handle: UInt16, cid: UInt16) {}
        func bond(for peer: DeviceAddress) -> Bond? { bonds[peer] }
        func store(_ bond: Bond, replacing: Bool) -> Bool { bonds[bond.peer] = bond; return true }
        func peerSigningKey(from peer: DeviceAddress) -> ATTPeerSigningKey? { nil }
        func acceptPeerSignCounter(_ counter: UInt32, from peer: DeviceAddress) -> Bool { false }

        func connect(handle: UInt16) { links[handle] = .testPeripheralLink(handle: handle) }
        func add(_ service: GATTServiceDefinition) throws -> GATTServiceHandles { try server.addService(service, self) }
        func receive(_ pdu: [UInt8], handle: UInt16) { server.receive(pdu, handle: handle, self) }
        func notify(_ value: [UInt8], valueHandle: UInt16) -> UpdateValueResult {
            server.updateValue(value, valueHandle: valueHandle, centrals: nil, self)
        }
    }

    let service = GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
    ])

    static func le(_ h: UInt16) -> [UInt8] { [UInt8(h & 0xFF), UInt8(h >> 8)] }

    /// A Read Request is answered with the value on the link's bearer.
    func testAReadRequestIsAnsweredOnTheLinksBearer() async throws {
        let d = Driver()
        let handles = try await d.add(service)
        let value = try XCTUnwrap(handles.characteristics.first?.valueHandle)
        await d.connect(handle: 0x40)
        await d.receive([0x0A] + Self.le(value), handle: 0x40)
        let att = await d.att
        XCTAssertEqual(att, [[0x0B, 0x42]])
    }

    /// Once the client subscribed (CCCD written), a notification goes out through the ACL flow
    /// as one packet: handle, L2CAP basic header on the ATT channel, Handle Value Notification.
    func testANotificationGoesOutThroughTheACLFlowOnceSubscribed() async throws {
        let d = Driver()
        let handles = try await d.add(service)
        let value = try XCTUnwrap(handles.characteristics.first?.valueHandle)
        let cccd = try XCTUnwrap(handles.characteristics.first?.cccdHandle)
        await d.connect(handle: 0x40)
        var result = await d.notify([0x01], valueHandle: value)
        var acl = await d.acl
        XCTAssertEqual(acl, [], "notified a client that did not subscribe")
        _ = result
        await d.receive([0x12] + Self.le(cccd) + [0x01, 0x00], handle: 0x40)
        let att = await d.att
        XCTAssertEqual(att, [[0x13]])
        result = await d.notify([0x07], valueHandle: value)
        acl = await d.acl
        let payload: [UInt8] = [0x1B] + Self.le(value) + [0x07]
        let l2cap: [UInt8] = Self.le(UInt16(payload.count)) + [0x04, 0x00] + payload
        XCTAssertEqual(acl, [[0x40, 0x00] + Self.le(UInt16(l2cap.count)) + l2cap])
    }
}
