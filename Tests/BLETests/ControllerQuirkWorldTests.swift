@testable import BLE
import BLEHCI
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Our hosts on virtual controllers that misbehave as real ones do (`VirtualControllerQuirk`,
/// each case naming its public source), in virtual time: the host gets a typed error or
/// recovers, never hangs or crashes, and keeps serving.
final class ControllerQuirkWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFFE0)
    static let value = BluetoothUUID(0xFFE1)

    static func controller(_ quirks: Set<VirtualControllerQuirk>, base: VirtualControllerConfiguration = VirtualControllerConfiguration()) -> VirtualControllerConfiguration {
        var c = base
        c.quirks = quirks
        return c
    }

    struct Rig {
        let manager: PeripheralManager
        let peripheralDevice: VirtualDevice
        let central: Central
        let centralDevice: VirtualDevice
        let valueHandle: UInt16
        var address: DeviceAddress { DeviceAddress(peripheralDevice.address, type: .public) }
    }

    /// A peripheral manager with one readable value ("quirk"), advertising, and a central; each
    /// on a controller configured as given.
    static func rig(_ world: VirtualWorld, central: VirtualControllerConfiguration = VirtualControllerConfiguration(),
                    peripheral: VirtualControllerConfiguration = VirtualControllerConfiguration()) async throws -> Rig {
        let (manager, pDevice) = try await world.addPeripheralManager(name: "Quirky", controller: peripheral)
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: value, properties: [.read, .writeWithoutResponse], permissions: [.read, .write],
                                         value: Array("quirk".utf8)),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Quirky").build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, cDevice) = try await world.addCentral(controller: central)
        return Rig(manager: manager, peripheralDevice: pDevice, central: c, centralDevice: cDevice,
                   valueHandle: try XCTUnwrap(handles[value]).valueHandle)
    }

    /// Connects and reads the value: data flows both ways.
    static func connectAndRead(_ rig: Rig) async throws -> Peripheral {
        let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
        let read = try await p.readValue(handle: rig.valueHandle)
        XCTAssertEqual(String(decoding: read, as: UTF8.self), "quirk")
        return p
    }

    static func close(_ rig: Rig) async {
        await rig.central.close()
        await rig.manager.close()
    }

    static func credits(_ host: HostController) async -> (available: Int, total: Int) {
        await host.run { ($0.aclFlow.availableCredits, $0.aclFlow.bufferCount) }
    }

    // MARK: Buffers and credits

    /// Q10: LE Read Buffer Size says 0 × 0; the host uses Read Buffer Size's buffers.
    func testSharedACLBuffersAreUsed() async throws {
        try await VirtualWorld.run { world in
            var base = VirtualControllerConfiguration()
            base.leACLBufferCount = 3
            let rig = try await Self.rig(world, central: Self.controller([.sharedACLBuffers], base: base))
            XCTAssertTrue(rig.central.controllerInfo.aclBuffersShared)
            XCTAssertEqual(rig.central.controllerInfo.aclBufferCount, 3)
            XCTAssertEqual(rig.central.controllerInfo.aclBufferLength, 27)
            let p = try await Self.connectAndRead(rig)
            _ = try await p.exchangeMTU(100)
            // More PDUs than buffers, fragmented at 27 octets: they all go through.
            for i in 0..<10 { try await p.writeValue([UInt8](repeating: UInt8(i), count: 60), handle: rig.valueHandle, type: .withoutResponse) }
            let read = try await p.readValue(handle: rig.valueHandle)
            XCTAssertEqual(read, [UInt8](repeating: 9, count: 60))
            let credits = await Self.credits(rig.central.host)
            XCTAssertEqual(credits.available, 3)
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// Q1: Number Of Completed Packets for the dead handle after each Disconnection Complete,
    /// once with more packets than the controller has buffers: credits stay at the buffer
    /// count on both hosts, and the next link carries data.
    func testCompletedPacketsForADeadHandleAreIgnored() async throws {
        for count: UInt16 in [1, 9] {
            try await VirtualWorld.run { world in
                let quirky = Self.controller([.completedPacketsAfterDisconnection(count: count)])
                let rig = try await Self.rig(world, central: quirky, peripheral: quirky)
                let p = try await Self.connectAndRead(rig)
                // Packets in flight when the link goes (the value written is the one it has).
                for _ in 0..<6 { try await p.writeValue(Array("quirk".utf8), handle: rig.valueHandle, type: .withoutResponse) }
                try await p.disconnect()
                try await world.clock.sleep(for: .milliseconds(100))
                for host in [rig.central.host, rig.manager.host] {
                    let credits = await Self.credits(host)
                    XCTAssertEqual(credits.available, credits.total, "count \(count): never above the buffers, none lost")
                }
                try await rig.manager.startAdvertising(AdvertisingData.Builder().localName("Quirky").build(),
                                                       parameters: AdvertisingParameters(interval: .milliseconds(20)))
                let again = try await Self.connectAndRead(rig)
                try await again.disconnect()
                await Self.close(rig)
            }
        }
    }

    // MARK: Command flow

    /// Q3: an unsolicited Reset completion in place of Read Local Version Information: the
    /// host sends the read again and initialisation goes on at once, not after the 5 s timeout.
    func testASpontaneousResetCompletionResendsThePendingCommand() async throws {
        try await VirtualWorld.run { world in
            let start = world.clock.now()
            let (central, _) = try await world.addCentral(controller: Self.controller([.spontaneousResetComplete(replacing: .readLocalVersionInformation)]))
            let took = world.clock.now() - start
            XCTAssertLessThan(took, .seconds(1), "no command timed out")
            XCTAssertEqual(central.controllerInfo.version?.hciVersion, 0x0D, "the resent read was answered")
            await central.close()
        }
    }

    /// A controller that loses the first command after power-on: the host sends HCI Reset once
    /// more after the command timeout, and initialisation succeeds.
    func testALostFirstResetIsSentOnceMore() async throws {
        try await VirtualWorld.run { world in
            let start = world.clock.now()
            let rig = try await Self.rig(world, central: Self.controller([.losesFirstCommand]))
            let took = world.clock.now() - start
            XCTAssertGreaterThanOrEqual(took, HostConfiguration().commandTimeout)
            XCTAssertLessThan(took, HostConfiguration().commandTimeout * 2)
            let p = try await Self.connectAndRead(rig)
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// A controller that never answers at all: initialisation fails with a typed error after the
    /// Reset and its one retry, not hangs.
    func testAControllerThatNeverAnswersFailsInitialisation() async throws {
        try await VirtualWorld.run { world in
            let device = await world.radio.addDevice()
            await world.radio.stallHCI(device.id)
            let start = world.clock.now()
            do {
                _ = try await Central.open(transport: device.transport, clock: world.clock)
                XCTFail("a silent controller cannot be initialised")
            } catch BLEError.hci(.commandTimeout(opcode: .reset)) {}
            let took = world.clock.now() - start
            XCTAssertEqual(took, HostConfiguration().commandTimeout * 2)
        }
    }

    /// Q4 and Q5: a credit-only NOP completion after Reset, and every Command Complete sent
    /// twice: initialisation, connecting and GATT work, on both roles.
    func testCreditOnlyAndDuplicateCompletionsAreIgnored() async throws {
        try await VirtualWorld.run { world in
            let quirky = Self.controller([.creditOnlyCommandComplete, .duplicateCommandComplete])
            let rig = try await Self.rig(world, central: quirky, peripheral: quirky)
            XCTAssertEqual(rig.central.controllerInfo.version?.hciVersion, 0x0D)
            XCTAssertEqual(rig.central.controllerInfo.aclBufferCount, 8)
            let p = try await Self.connectAndRead(rig)
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// Q5: with every Command Complete duplicated, two LE Rand commands back to back each get
    /// their own answer, not the first one's duplicate.
    func testADuplicateCompletionDoesNotAnswerTheNextCommand() async throws {
        try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral(controller: Self.controller([.duplicateCommandComplete]))
            let results = try await central.host.run { host in
                async let a = host.commandReturning(.leRand)
                async let b = host.commandReturning(.leRand)
                return try await [a, b]
            }
            XCTAssertNotEqual(results[0], results[1], "each LE Rand has its own random number")
            await central.close()
        }
    }

    /// Q8: commands a Bluetooth 4.0 controller lacks answered with Command Status 0x01:
    /// initialisation takes them as not supported, as with Command Complete.
    func testUnknownCommandsAnsweredWithCommandStatusAreNotSupported() async throws {
        try await VirtualWorld.run { world in
            let old = Self.controller([.unknownCommandAsCommandStatus], base: VirtualControllerProfile.bluetooth40.configuration)
            let start = world.clock.now()
            let rig = try await Self.rig(world, central: old, peripheral: old)
            XCTAssertLessThan(world.clock.now() - start, .seconds(1))
            XCTAssertEqual(rig.central.controllerInfo.version?.hciVersion, 0x06)
            XCTAssertEqual(rig.central.controllerInfo.aclBufferCount, 4)
            let p = try await Self.connectAndRead(rig)
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// Q7: LE Set Data Length listed but answered Unknown HCI Command: the call throws a typed
    /// error and the link keeps working.
    func testAListedButUnknownSetDataLengthThrowsAndTheLinkWorks() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, central: Self.controller([.listedButUnknown([.leSetDataLength])]))
            XCTAssertEqual(rig.central.controllerInfo.supportedCommands?.leSetDataLength, true)
            let p = try await Self.connectAndRead(rig)
            do {
                try await p.setDataLength(251)
                XCTFail("refused by the controller")
            } catch BLEError.hci(.commandFailed(opcode: .leSetDataLength, status: .unknownCommand)) {}
            let read = try await p.readValue(handle: rig.valueHandle)
            XCTAssertEqual(String(decoding: read, as: UTF8.self), "quirk")
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// Q7: LE Set Address Resolution Enable and LE Set RPA Timeout listed but answered Unknown
    /// HCI Command: the host resolves the bonded peripheral's RPAs itself.
    func testAListedButUnknownAddressResolutionFallsBackToTheHost() async throws {
        try await VirtualWorld.run { world in
            let rig = try await PrivacyWorldTests.rig(world, peripheralPrivacy: true, centralPrivacy: false, controllerResolution: true)
            let identity = try await PrivacyWorldTests.bond(rig, at: try await PrivacyWorldTests.findLock(rig.central).address)
            await rig.central.close()
            let broken = Self.controller([.listedButUnknown([.leSetAddressResolutionEnable, .leSetResolvablePrivateAddressTimeout])])
            let device = await world.radio.addDevice(configuration: broken)
            let central = try await Central.open(transport: device.transport, address: .public, clock: world.clock,
                                                 configuration: PrivacyWorldTests.configuration(store: rig.centralStore, controllerResolution: true))
            let lock = try await PrivacyWorldTests.findLock(central)
            XCTAssertEqual(lock.identity, identity, "the host resolved the RPA")
            XCTAssertEqual(lock.address.address.randomKind, .resolvablePrivate, "the controller did not")
            let enabled = await world.radio.controller(device.id)?.addressResolutionEnabled
            XCTAssertEqual(enabled, false)
            // Reached by its identity, which only the host can resolve now. (This controller's
            // public address is not the bonded one, so the link is not encrypted.)
            let p = try await central.connect(identity, timeout: .seconds(5))
            XCTAssertEqual(p.state, .connected)
            try await p.disconnect()
            await central.close()
            await rig.manager.close()
        }
    }

    // MARK: Link procedures

    /// An LE Connection Update accepted (Command Status 0) that never completes: the request
    /// ends with `.timeout` after the command timeout plus the 40 s procedure timeout, and the
    /// link keeps serving GATT.
    func testASilentConnectionUpdateTimesOutAndTheLinkServes() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheral: Self.controller([.silentConnectionUpdate]))
            let events = await rig.manager.events
            let p = try await Self.connectAndRead(rig)
            var connected: ConnectedCentral?
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            let start = world.clock.now()
            do {
                _ = try await rig.manager.requestConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400,
                                                                      for: try XCTUnwrap(connected))
                XCTFail("no completion ever comes")
            } catch BLEError.timeout {}
            let took = world.clock.now() - start
            XCTAssertLessThanOrEqual(took, HostConfiguration().commandTimeout + .seconds(40) + .milliseconds(100))
            XCTAssertGreaterThanOrEqual(took, .seconds(40))
            let read = try await p.readValue(handle: rig.valueHandle)
            XCTAssertEqual(String(decoding: read, as: UTF8.self), "quirk")
            try await p.disconnect()
            await Self.close(rig)
        }
    }

    /// Q2-like: an ACL packet for the link after its Disconnection Complete (an ATT request):
    /// dropped, with no link brought back, and the next central is served.
    func testACLAfterDisconnectionIsDropped() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheral: Self.controller([.aclAfterDisconnection]))
            let p = try await Self.connectAndRead(rig)
            try await p.disconnect()
            try await world.clock.sleep(for: .milliseconds(100))
            let handles = await rig.manager.host.run { $0.connections.links.handles }
            XCTAssertEqual(handles, [], "no link resurrected")
            let centrals = await rig.manager.connectedCentrals
            XCTAssertTrue(centrals.isEmpty)
            try await rig.manager.startAdvertising(AdvertisingData.Builder().localName("Quirky").build(),
                                                   parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let again = try await Self.connectAndRead(rig)
            // And the link lost from the far side (supervision timeout) too.
            await world.radio.dropLinks(of: rig.centralDevice.id)
            try await world.clock.sleep(for: .seconds(6))
            XCTAssertEqual(again.state, .disconnected(reason: .connectionTimeout))
            let after = await rig.manager.host.run { $0.connections.links.handles }
            XCTAssertEqual(after, [])
            await Self.close(rig)
        }
    }

    // MARK: Scanning

    /// Q11: reports with RSSI 127 ("not available") and malformed reports after each good one:
    /// the scan keeps delivering the good ones, with no RSSI rather than +127 dBm, and the
    /// malformed data never reaches the device.
    func testReportsWithoutRSSIAndMalformedReports() async throws {
        try await VirtualWorld.run { world in
            // Legacy reports: a controller without Bluetooth 5 advertising.
            var legacy = VirtualControllerConfiguration()
            legacy.extendedAdvertising = nil
            let rig = try await Self.rig(world, central: Self.controller([.advertisingReportsWithoutRSSI, .malformedAdvertisingReports], base: legacy))
            var seen = 0
            for try await device in rig.central.scan(filter: ScanFilter(nameContains: "Quirky", allowDuplicates: true), active: false,
                                                     timeout: .seconds(5)) {
                XCTAssertNil(device.rssi, "127 is 'not available', not a level")
                XCTAssertEqual(device.advertisement.localName, "Quirky")
                seen += 1
                if seen == 5 { break }
            }
            await rig.central.stopScan()
            XCTAssertEqual(seen, 5)
            let p = try await Self.connectAndRead(rig)
            try await p.disconnect()
            await Self.close(rig)
        }
    }
}
