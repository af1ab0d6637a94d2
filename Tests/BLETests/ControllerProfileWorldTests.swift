import BLEHCI
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Each controller profile (`virtual:4.0` ...) as a host meets it, in virtual time: what the
/// host learns at initialisation, that the controller took the LE event mask the host set (a
/// strict profile refuses reserved bits, and the host's start would only log that), and what a
/// call the controller cannot serve throws.
final class ControllerProfileWorldTests: XCTestCase {
    struct Seen: Sendable {
        var version: UInt8?
        var aclBufferLength: Int
        var extended: Bool
        var privacyInController: Bool
        var dataLengthExtension: Bool
        var phys: LEPHYSet
        var filterAcceptListSize: Int?
        var resolvingListSize: Int?
        var advertisingSets: Int?
        var maximumAdvertisingDataLength: Int?
        var leEventMask: UInt64
        var listsSetDataLength: Bool
    }

    func seen(on profile: VirtualControllerProfile) async throws -> Seen {
        try await VirtualWorld.run(limit: .seconds(60)) { world in
            let (central, device) = try await world.addCentral(controller: profile.configuration)
            let info = central.controllerInfo
            let mask = await world.radio.controller(device.id)?.leEventMask ?? 0
            await central.close()
            return Seen(version: info.version?.hciVersion, aclBufferLength: info.aclBufferLength,
                        extended: info.usesExtendedCommands(.extendedWhenSupported), privacyInController: info.resolvesAddressesInController,
                        dataLengthExtension: info.supportsDataLengthExtension, phys: info.supportedPHYs,
                        filterAcceptListSize: info.filterAcceptListSize, resolvingListSize: info.resolvingListSize,
                        advertisingSets: info.advertisingSets, maximumAdvertisingDataLength: info.maximumAdvertisingDataLength,
                        leEventMask: mask, listsSetDataLength: info.lists(.leSetDataLength))
        }
    }

    func testBluetooth40() async throws {
        let s = try await seen(on: .bluetooth40)
        XCTAssertEqual(s.version, 0x06)
        XCTAssertEqual(s.aclBufferLength, 27)
        XCTAssertFalse(s.extended)
        XCTAssertFalse(s.privacyInController)
        XCTAssertFalse(s.dataLengthExtension)
        XCTAssertFalse(s.listsSetDataLength)
        XCTAssertEqual(s.phys, .le1M)
        XCTAssertEqual(s.filterAcceptListSize, 4)
        XCTAssertNil(s.resolvingListSize)
        XCTAssertEqual(s.leEventMask, 0x1F, "the host's mask, within 4.0's bits (not refused, not the reset default by chance)")
    }

    func testBluetooth42() async throws {
        let s = try await seen(on: .bluetooth42)
        XCTAssertEqual(s.version, 0x08)
        XCTAssertEqual(s.aclBufferLength, 251)
        XCTAssertFalse(s.extended)
        XCTAssertFalse(s.privacyInController, "LL Privacy without LE Set Privacy Mode (5.0): the host resolves")
        XCTAssertTrue(s.dataLengthExtension)
        XCTAssertEqual(s.phys, .le1M)
        XCTAssertEqual(s.resolvingListSize, 4)
        XCTAssertEqual(s.leEventMask & ~0x7FF, 0, "no bit beyond 4.2's")
        XCTAssertNotEqual(s.leEventMask & (1 << 9), 0, "LE Enhanced Connection Complete, which 4.2 defines")
    }

    func testBluetooth50() async throws {
        let s = try await seen(on: .bluetooth50)
        XCTAssertEqual(s.version, 0x09)
        XCTAssertTrue(s.extended)
        XCTAssertEqual(s.advertisingSets, 2)
        XCTAssertEqual(s.maximumAdvertisingDataLength, 251)
        XCTAssertEqual(s.phys, [.le1M, .le2M, .leCoded])
        XCTAssertEqual(s.leEventMask & ~0xFFFFF, 0, "no bit beyond 5.0's")
        XCTAssertNotEqual(s.leEventMask & (1 << 12), 0, "LE Extended Advertising Report")
    }

    func testTheDefaultProfileIsTodaysController() async throws {
        let s = try await seen(on: .current)
        XCTAssertEqual(s.version, VirtualControllerConfiguration().hciVersion)
        XCTAssertTrue(s.extended)
        XCTAssertTrue(s.privacyInController)
        XCTAssertEqual(s.advertisingSets, 4)
    }

    /// A command a profile lacks is answered Unknown HCI Command and is not in its list; what it
    /// has is answered.
    func testAProfileAnswersWhatItLacksWithUnknownHCICommand() {
        var controller = VirtualController(address: BDAddress(rawValue: 1), configuration: VirtualControllerProfile.bluetooth40.configuration)
        let out = controller.handle(HCICommand(opcode: .leReadMaximumDataLength))
        XCTAssertEqual(out.toHost, [.event(.commandComplete(numHCICommandPackets: 1, opcode: .leReadMaximumDataLength, returnParameters: [0x01]))])
        let listed = controller.handle(HCICommand(opcode: .readLocalSupportedCommands))
        guard case let .event(.commandComplete(_, _, parameters))? = listed.toHost.first else { return XCTFail("\(listed)") }
        let commands = LocalSupportedCommands(octets: Array(parameters.dropFirst()))
        XCTAssertFalse(commands.leReadMaximumDataLength)
        XCTAssertFalse(commands.leSetExtendedAdvertisingParameters)
        XCTAssertTrue(commands.leCreateConnection)
        XCTAssertTrue(commands.leEnableEncryption)
    }

    /// A strict profile refuses an LE event mask with bits its version leaves reserved.
    func testAStrictProfileRefusesReservedEventBits() {
        var controller = VirtualController(address: BDAddress(rawValue: 1), configuration: VirtualControllerProfile.bluetooth40.configuration)
        let refused = controller.handle(.leSetEventMask(LEEventMask.default))
        XCTAssertEqual(refused.toHost, [.event(.commandComplete(numHCICommandPackets: 1, opcode: .leSetEventMask, returnParameters: [0x12]))])
        let taken = controller.handle(.leSetEventMask(LEEventMask(rawValue: 0x1F)))
        XCTAssertEqual(taken.toHost, [.event(.commandComplete(numHCICommandPackets: 1, opcode: .leSetEventMask, returnParameters: [0]))])
    }

    /// On 4.0, changing a link's data length or PHY is refused by the host with a typed error
    /// naming the command, before anything is sent.
    func testCallsA40ControllerCannotServeThrowUnsupported() async throws {
        let (dataLength, phy) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let config = VirtualControllerProfile.bluetooth40.configuration
            let (manager, peripheralDevice) = try await world.addPeripheralManager(name: "Forty", controller: config)
            try await manager.startAdvertising(AdvertisingData())
            let (central, _) = try await world.addCentral(controller: config)
            let peripheral = try await central.connect(DeviceAddress(peripheralDevice.address, type: .public), timeout: .seconds(10))
            var errors: [BLEError?] = []
            do { try await peripheral.setDataLength(251); errors.append(nil) } catch { errors.append(error as? BLEError) }
            do { try await peripheral.setPHY(.le2M); errors.append(nil) } catch { errors.append(error as? BLEError) }
            try? await peripheral.disconnect()
            await central.close()
            await manager.close()
            return (errors[0], errors[1])
        }
        guard case let .unsupported(m)? = dataLength else { return XCTFail("\(String(describing: dataLength))") }
        XCTAssertTrue(m.contains("LE Set Data Length") && m.contains("this controller does not support"), m)
        guard case let .unsupported(p)? = phy else { return XCTFail("\(String(describing: phy))") }
        XCTAssertTrue(p.contains("LE Set PHY"), p)
    }

    /// A controller without a public address (Read BD_ADDR answers zero, §7.4.6, as Bumble's own
    /// controller does): a host asked for `.public` goes on the air with its local identity's
    /// static random address instead, and peers can connect back to it.
    func testAControllerWithoutAPublicAddressUsesAStaticRandomOne() async throws {
        let seen = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let (manager, peripheralDevice) = try await world.addPeripheralManager(name: "P")
            try await manager.startAdvertising(AdvertisingData())
            let (central, _) = try await world.addCentral(address: BDAddress(rawValue: 0))
            let peripheral = try await central.connect(DeviceAddress(peripheralDevice.address, type: .public), timeout: .seconds(10))
            var seen: DeviceAddress?
            for _ in 0..<100 {
                if let c = await manager.connectedCentrals.first { seen = c.address; break }
                try await world.clock.sleep(for: .milliseconds(10))
            }
            try? await peripheral.disconnect()
            await central.close()
            await manager.close()
            return seen
        }
        let address = try XCTUnwrap(seen, "the peripheral saw no central")
        XCTAssertEqual(address.type, .random)
        XCTAssertEqual(address.address.rawValue >> 46, 0b11, "a static random address (top two bits set): \(address)")
    }

    /// Read RSSI goes through the controller like any command (the medium only supplies what
    /// it hears): answered where listed, Unknown HCI Command where listed but broken, and
    /// refused by the host where the controller does not list it.
    func testReadRSSIIsGatedLikeEveryCommand() async throws {
        func readRSSI(_ configuration: VirtualControllerConfiguration) async throws -> Result<Int, BLEError> {
            try await VirtualWorld.run(limit: .seconds(120)) { world in
                let (manager, device) = try await world.addPeripheralManager(name: "R")
                try await manager.startAdvertising(AdvertisingData())
                let (central, _) = try await world.addCentral(controller: configuration)
                let peripheral = try await central.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(10))
                let result: Result<Int, BLEError>
                do { result = .success(try await peripheral.readRSSI()) } catch let e as BLEError { result = .failure(e) }
                try? await peripheral.disconnect()
                await central.close()
                await manager.close()
                return result
            }
        }
        let plain = try await readRSSI(VirtualControllerConfiguration())
        XCTAssertEqual(try plain.get(), -40, "0 dBm at the 1 m minimum distance")
        var broken = VirtualControllerConfiguration()
        broken.quirks = [.listedButUnknown([.readRSSI])]
        guard case .failure(.hci(.commandFailed(opcode: .readRSSI, status: .unknownCommand))) = try await readRSSI(broken) else {
            return XCTFail("a listed but broken Read RSSI must fail with Unknown HCI Command")
        }
        var lacking = VirtualControllerConfiguration()
        lacking.lacksCommands = [.readRSSI]
        guard case let .failure(.unsupported(message)) = try await readRSSI(lacking) else {
            return XCTFail("an unlisted Read RSSI must be refused by the host")
        }
        XCTAssertTrue(message.contains("Read RSSI"), message)
    }
}
