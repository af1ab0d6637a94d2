@testable import BLE
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import BLETestSupport
import XCTest

/// The peripheral role through the host actor over a scripted controller: advertising commands,
/// a central connecting, its requests answered by our GATT server, notifications with
/// backpressure, and advertising resuming after the central leaves.
final class HostPeripheralRoleTests: XCTestCase {
    let central = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_09), type: .random)
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_06)

    func manager(_ t: HostUnderTest) async throws -> PeripheralManager {
        await t.controller.start()
        return try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own))
    }

    func connect(_ t: HostUnderTest, handle: UInt16 = 0x0041) async {
        await t.controller.sendNow(.le(.connectionComplete(LEConnectionComplete(
            status: .success, handle: handle, role: .peripheral, peer: central, interval: 24, latency: 0,
            supervisionTimeout: 400, centralClockAccuracy: 0, format: .legacy))))
    }

    func attPDUs(_ t: HostUnderTest) async -> [[UInt8]] {
        await Self.attPDUs(t)
    }

    static func attPDUs(_ t: HostUnderTest) async -> [[UInt8]] {
        await t.controller.l2capPayloads(channel: 0x0004)
    }

    func testAdvertisingCommandsUseTheStaticRandomAddress() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let random = try await t.controller.waitForCommand(.leSetRandomAddress)
        XCTAssertEqual(random.parameters, own.littleEndianBytes)
        let data = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("Thermo").build()
        try await m.startAdvertising(data, parameters: AdvertisingParameters(interval: .milliseconds(100)))
        let parameters = try await t.controller.waitForCommand(.leSetAdvertisingParameters)
        XCTAssertEqual(Array(parameters.parameters[0..<6]), [160, 0, 160, 0, 0x00, 0x01], "100 ms, ADV_IND, own address random")
        let advertisingData = try await t.controller.waitForCommand(.leSetAdvertisingData)
        XCTAssertEqual(advertisingData.parameters.count, 32, "length byte + 31 bytes, zero-padded")
        XCTAssertEqual(Array(advertisingData.parameters[0...11]), [11, 0x02, 0x01, 0x06, 0x07, 0x09] + Array("Thermo".utf8))
        let enable = try await t.controller.waitForCommand(.leSetAdvertisingEnable)
        XCTAssertEqual(enable.parameters, [0x01])
        let advertising = await m.isAdvertising
        XCTAssertTrue(advertising)
        await m.close()
    }

    func testAdvertisingDataOverTheLimitIsRefused() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let tooLong = AdvertisingData.Builder().localName(String(repeating: "x", count: 40)).build()
        do {
            try await m.startAdvertising(tooLong)
            XCTFail("expected a refusal")
        } catch BLEError.invalidArgument(let message) {
            XCTAssertTrue(message.contains("31"), message)
        }
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(sent.contains(.leSetAdvertisingEnable), "nothing was started")
        await m.close()
    }

    func testIntervalOutOfRangeIsRefused() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        do {
            try await m.startAdvertising(AdvertisingData(), parameters: AdvertisingParameters(interval: .milliseconds(5)))
            XCTFail("expected a refusal")
        } catch BLEError.invalidArgument {}
        await m.close()
    }

    func testCentralConnectsIsServedAndAdvertisingResumesAfterItLeaves() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let events = await m.events
        try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: [.read], value: [77]),
        ]))
        try await m.startAdvertising(AdvertisingData.Builder().localName("B").build(),
                                     parameters: AdvertisingParameters(continueWhileConnected: false))
        await connect(t)
        var it = events.makeAsyncIterator()
        var connected: ConnectedCentral?
        while let e = await it.next() {
            if case let .connected(c) = e { connected = c; break }
        }
        XCTAssertEqual(connected?.address, central)
        // Read By Type for Battery Level (2A19) over the whole range.
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x19, 0x2A])
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { !$0.isEmpty }
        let response = await attPDUs(t)[0]
        XCTAssertEqual(response.first, 0x09, "Read By Type Response")
        XCTAssertEqual(response.last, 77)

        let enablesBefore = await t.controller.commands.filter { $0.opcode == .leSetAdvertisingEnable && $0.parameters == [1] }.count
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        while let e = await it.next() {
            if case let .disconnected(c, reason) = e {
                XCTAssertEqual(c, connected)
                XCTAssertEqual(reason, .remoteUserTerminatedConnection)
                break
            }
        }
        // Advertising turned back on: one more enable than before the disconnect.
        try await t.controller.waitForCommands { $0.filter { $0.opcode == .leSetAdvertisingEnable && $0.parameters == [1] }.count > enablesBefore }
        await m.close()
    }

    func testNotificationsGoOnlyToSubscribersAndReportAFullQueue() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180D), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A37), properties: [.notify], permissions: [], value: nil),
        ]))
        let valueHandle = try XCTUnwrap(handles.valueHandle(for: BluetoothUUID(0x2A37)))
        let cccd = try XCTUnwrap(handles.cccdHandle(for: BluetoothUUID(0x2A37)))
        await connect(t)
        await m.waitForConnectedCentrals(1)
        let before = await m.updateValue([1], forHandle: valueHandle)
        XCTAssertEqual(before, .queued(centrals: 0), "nobody subscribed yet")

        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00])
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.contains([0x13]) }
        // Hold the controller's credits back so notifications pile up in the server's queue.
        await t.controller.configure { $0.returnCredits = false }
        var results: [UpdateValueResult] = []
        for i in 0..<64 {
            results.append(await m.updateValue([UInt8(i)], forHandle: valueHandle))
            if results.last == .queueFull { break }
        }
        XCTAssertEqual(results.last, .queueFull, "a bounded queue fills up")
        let events = await m.events
        await t.controller.configure { $0.returnCredits = true }
        await t.controller.returnAllCredits(handle: 0x0041)
        var it = events.makeAsyncIterator()
        while let e = await it.next() {
            if case .readyToUpdateSubscribers = e { break }
        }
        let sent = await attPDUs(t).filter { $0.first == 0x1B }
        XCTAssertEqual(sent.first, [0x1B, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8), 0])
        XCTAssertEqual(sent.map { $0.last }, sent.indices.map { UInt8($0) }, "in order, none lost")
        await m.close()
    }

    /// Two centrals reading the same dynamic value at once each get their own answer (the
    /// servers of two links number their requests independently).
    func testConcurrentDynamicReadsFromTwoCentralsAreNotMixedUp() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180A), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A29), properties: [.read], permissions: [.read], value: nil),
        ]))
        let valueHandle = try XCTUnwrap(handles.valueHandle(for: BluetoothUUID(0x2A29)))
        let controller = t.controller
        await m.setReadHandler(forHandle: valueHandle) { request in
            // Answer the first central only once the second has had its answer, so the two
            // requests overlap and the answers go out in the other order.
            if request.central.id == 1 {
                do { try await controller.waitForACL { $0.contains { $0.handle == 0x0042 } } } catch { XCTFail("\(error)") }
            }
            return .success([UInt8(request.central.id)])
        }
        await connect(t, handle: 0x0041)
        await t.controller.sendNow(.le(.connectionComplete(LEConnectionComplete(
            status: .success, handle: 0x0042, role: .peripheral, peer: DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_0A), type: .random),
            interval: 24, latency: 0, supervisionTimeout: 400, centralClockAccuracy: 0, format: .legacy))))
        await m.waitForConnectedCentrals(2)
        let read: [UInt8] = [0x0A, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)]
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: read)
        await t.controller.sendL2CAP(handle: 0x0042, channel: 4, payload: read)
        try await t.controller.waitForACL { acl in acl.contains { $0.handle == 0x0041 } && acl.contains { $0.handle == 0x0042 } }
        let packets = await t.controller.acl
        let first = try XCTUnwrap(packets.first { $0.handle == 0x0041 })
        let second = try XCTUnwrap(packets.first { $0.handle == 0x0042 })
        XCTAssertEqual(Array(first.data.dropFirst(4)), [0x0B, 1], "central 1 gets its own answer")
        XCTAssertEqual(Array(second.data.dropFirst(4)), [0x0B, 2], "central 2 gets its own answer")
        await m.close()
    }

    func testAuthorizationIsGrantedPerCentral() async throws {
        let t = HostUnderTest()
        let m = try await manager(t)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180A), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A25), properties: [.read], permissions: [.readAuthorized], value: [0x42]),
        ]))
        let valueHandle = try XCTUnwrap(handles.valueHandle(for: BluetoothUUID(0x2A25)))
        await connect(t)
        await m.waitForConnectedCentrals(1)
        let read: [UInt8] = [0x0A, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)]
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: read)
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 1 }
        let refused = await attPDUs(t)[0]
        XCTAssertEqual(refused, [0x01, 0x0A, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8), 0x08], "Insufficient Authorization")
        let central = try await XCTUnwrapAsync(await m.connectedCentrals.first)
        await m.authorize(central)
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: read)
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 2 }
        let granted = await attPDUs(t)[1]
        XCTAssertEqual(granted, [0x0B, 0x42])
        await m.close()
    }

    func XCTUnwrapAsync<T>(_ value: T?) async throws -> T {
        try XCTUnwrap(value)
    }
}
