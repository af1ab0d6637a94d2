@testable import BLE
import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import XCTest
import BLETestSupport

/// The host actor's ATT path end to end over a fake controller: L2CAP fragmentation both ways,
/// ACL credits, notifications, indications, peer requests and the transaction timeout.
final class HostGATTTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    let handle: UInt16 = 0x0040

    func connected(clock: any BLEClock = SystemClock()) async throws -> (HostUnderTest, Central, Peripheral) {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let p = try await central.connect(peer, timeout: .seconds(5))
        return (t, central, p)
    }

    /// Checks the n-th ATT PDU the host sent.
    func expectPDU(_ t: HostUnderTest, _ n: Int, _ expected: [UInt8], _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async {
        let got = await attPDU(t, n)
        XCTAssertEqual(got, expected, message, file: file, line: line)
    }

    /// Waits for the n-th ATT PDU from the host and returns it.
    func attPDU(_ t: HostUnderTest, _ n: Int, file: StaticString = #filePath, line: UInt = #line) async -> [UInt8] {
        do {
            return try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count > n }[n]
        } catch {
            XCTFail("ATT PDU \(n): \(error)", file: file, line: line)
            return []
        }
    }

    func testMTUExchangeAsksFor517AndTakesTheMinimum() async throws {
        let (t, central, p) = try await connected()
        let exchange = Task { try await p.exchangeMTU() }
        let request = await attPDU(t, 0)
        XCTAssertEqual(request, [0x02, 0x05, 0x02], "Exchange MTU Request, 517")
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x03, 0xF7, 0x00])
        let mtu = try await exchange.value
        XCTAssertEqual(mtu, 247)
        XCTAssertEqual(p.mtu, 247)
        XCTAssertEqual(p.maximumWriteValueLength(for: .withoutResponse), 244)
        await central.close()
    }

    func testLongReadAcrossFragmentedResponses() async throws {
        let (t, central, p) = try await connected()
        let value = (0..<60).map { UInt8($0) }
        let read = Task { try await p.readValue(handle: 0x0010) }
        await expectPDU(t, 0, [0x0A, 0x10, 0x00])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x0B] + value[0..<22], fragment: 10)
        await expectPDU(t, 1, [0x0C, 0x10, 0x00, 22, 0])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x0D] + value[22..<44], fragment: 7)
        await expectPDU(t, 2, [0x0C, 0x10, 0x00, 44, 0])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x0D] + value[44..<60])
        let got = try await read.value
        XCTAssertEqual(got, value)
        await central.close()
    }

    func testWriteFillsOneControllerBufferExactly() async throws {
        let (t, central, p) = try await connected()
        let write = Task { try await p.writeValue(Array(repeating: 0xAB, count: 20), handle: 0x0012) }
        let request = await attPDU(t, 0)
        XCTAssertEqual(request, [0x12, 0x12, 0x00] + Array(repeating: 0xAB, count: 20))
        let packets = await t.controller.acl
        XCTAssertEqual(packets.map(\.data.count), [27], "4-byte L2CAP header + 23-byte PDU fill one 27-byte buffer")
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x13])
        try await write.value
        await central.close()
    }

    func testNotificationsAndIndicationsAreDeliveredAndIndicationsConfirmed() async throws {
        let (t, central, p) = try await connected()
        let values = await p.notifications(valueHandle: 0x0020)
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x1B, 0x20, 0x00, 0x01, 0x02])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x1D, 0x20, 0x00, 0x03])
        var it = values.makeAsyncIterator()
        let first = await it.next()
        let second = await it.next()
        XCTAssertEqual(first, [0x01, 0x02])
        XCTAssertEqual(second, [0x03])
        await expectPDU(t, 0, [0x1E], "Handle Value Confirmation")
        await central.close()
    }

    /// On a link we opened as central, the peer may still use our GATT server (one ATT bearer
    /// serves both roles, Vol 3 Part F §3.2.4): its requests reach the database.
    func testPeerRequestsOnACentralLinkAreAnsweredByOurServer() async throws {
        let (t, central, _) = try await connected()
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        let services = await attPDU(t, 0)
        XCTAssertEqual(services.first, 0x11, "Read By Group Type Response")
        XCTAssertEqual(Array(services[2...3]), [0x01, 0x00], "the GAP service starts at handle 1")
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x02, 0x00, 0x01])
        await expectPDU(t, 1, [0x03, 0x05, 0x02], "Exchange MTU Response with our MTU")
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x0A, 0x00, 0x05])
        await expectPDU(t, 2, [0x01, 0x0A, 0x00, 0x05, 0x01], "Error Response: Invalid Handle")
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x52, 0x00, 0x05, 0x01])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x3F])
        await expectPDU(t, 3, [0x01, 0x3F, 0x00, 0x00, 0x06], "an unknown request gets Request Not Supported; the command before it got nothing")
        await central.close()
    }

    func testTransactionTimeoutFailsTheRequestAndClosesTheLink() async throws {
        let clock = ManualClock()
        let (t, central, p) = try await connected(clock: clock)
        let read = Task { try await p.readShortValue(handle: 0x0010) }
        _ = await attPDU(t, 0)
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(30) }
        clock.advance(by: .seconds(30))
        do {
            _ = try await read.value
            XCTFail("expected a timeout")
        } catch BLEError.gatt(.timeout) {}
        let d = try await t.controller.waitForCommand(.disconnect)
        XCTAssertEqual(d.parameters.prefix(2), [0x40, 0x00])
        await central.close()
    }

    func testGarbageFromThePeerDoesNotStopTheLink() async throws {
        let (t, central, p) = try await connected()
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x09, 0x07])  // truncated Read By Type Response, unsolicited
        await t.controller.sendL2CAP(handle: handle, channel: 0x0040, payload: [1, 2, 3])  // unrouted channel
        // A continuation fragment with no start: dropped by reassembly.
        try await t.controller.end.send(ACLPacket(handle: handle, boundary: .continuing, data: [1, 2, 3]).h4Frame)
        let read = Task { try await p.readShortValue(handle: 0x0003) }
        await expectPDU(t, 0, [0x0A, 0x03, 0x00])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x0B, 0x41])
        let value = try await read.value
        XCTAssertEqual(value, [0x41])
        await central.close()
    }

    func testServiceChangedIndicationInvalidatesDiscoveredServices() async throws {
        let (t, central, p) = try await connected()
        let discovery = Task { try await p.discoverServices() }
        await expectPDU(t, 0, [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x11, 6, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18, 0x06, 0x00, 0x0D, 0x00, 0x01, 0x18])
        await expectPDU(t, 1, [0x10, 0x0E, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x01, 0x10, 0x0E, 0x00, 0x0A])
        let services = try await discovery.value
        XCTAssertEqual(services.map(\.uuid), [BluetoothUUID(0x1800), BluetoothUUID(0x1801)])
        XCTAssertEqual(p.services.count, 2)

        let gattService = services[1]
        let characteristics = Task { try await p.discoverCharacteristics(for: gattService) }
        await expectPDU(t, 2, [0x08, 0x06, 0x00, 0x0D, 0x00, 0x03, 0x28])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x09, 7, 0x07, 0x00, 0x20, 0x08, 0x00, 0x05, 0x2A])
        await expectPDU(t, 3, [0x08, 0x08, 0x00, 0x0D, 0x00, 0x03, 0x28])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x01, 0x08, 0x08, 0x00, 0x0A])
        // The stack enables Service Changed indications itself: find the CCCD, write 0x0002.
        await expectPDU(t, 4, [0x04, 0x09, 0x00, 0x0D, 0x00])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x05, 0x01, 0x09, 0x00, 0x02, 0x29])
        await expectPDU(t, 5, [0x04, 0x0A, 0x00, 0x0D, 0x00])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x01, 0x04, 0x0A, 0x00, 0x0A])
        await expectPDU(t, 6, [0x12, 0x09, 0x00, 0x02, 0x00])
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x13])
        _ = try await characteristics.value

        let changes = await p.servicesChanged()
        await t.controller.sendL2CAP(handle: handle, channel: 4, payload: [0x1D, 0x08, 0x00, 0x01, 0x00, 0x05, 0x00])
        var it = changes.makeAsyncIterator()
        let range = await it.next()
        XCTAssertEqual(range, 0x0001...0x0005)
        XCTAssertEqual(p.services.map(\.uuid), [BluetoothUUID(0x1801)], "the service in the changed range must be rediscovered")
        await expectPDU(t, 7, [0x1E])
        await central.close()
    }
}
