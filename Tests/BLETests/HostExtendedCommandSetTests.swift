@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest
import BLETestSupport

/// Which command set a host drives its controller with (Core spec Vol 4 Part E §3.1.1: the
/// legacy and the extended advertising, scanning and connecting commands are never mixed on one
/// controller): chosen once, from the configuration and what the controller lists, and then
/// used by every scan, connect and advertisement.
final class HostExtendedCommandSetTests: XCTestCase {
    let device = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    static let legacyOpcodes: Set<HCIOpcode> = [
        .leSetScanParameters, .leSetScanEnable, .leCreateConnection,
        .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable,
    ]
    static let extendedOpcodes: Set<HCIOpcode> = [
        .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnection,
        .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData,
        .leSetExtendedAdvertisingEnable, .leSetAdvertisingSetRandomAddress,
    ]

    func configuration(_ commands: AdvertisingCommandSet) -> HostConfiguration {
        var c = HostConfiguration()
        c.advertisingCommands = commands
        return c
    }

    /// The opcodes of one set the host sent, in order.
    func sent(_ t: HostUnderTest, of set: Set<HCIOpcode>) async -> [HCIOpcode] {
        await t.controller.commands.map(\.opcode).filter(set.contains)
    }

    /// By default, on a controller that lists them: a scan on LE 1M and LE Coded is driven by the
    /// extended scan commands, an extended advertisement cut into two reports (data beyond the
    /// legacy 31 octets) reaches it whole with its set and PHYs, and the connect that follows is
    /// LE Extended Create Connection; no legacy command is ever sent.
    func testExtendedWhenSupportedScansAndConnectsWithTheExtendedCommandsOnly() async throws {
        let t = HostUnderTest()
        await t.controller.configure {
            $0.listsExtendedAdvertisingCommands = true
            $0.leFeatures = [0x01, 0x09, 0, 0, 0, 0, 0, 0] // and the LE 2M and LE Coded PHYs
            $0.linkPHY = .leCoded
        }
        await t.controller.start()
        // The default configuration: the extended commands where the controller has them.
        let central = try await Central.open(transport: t.hostEnd)
        let name = String(repeating: "Long range sensor ", count: 4)
        let data = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName(name).build().encode()
        XCTAssertGreaterThan(data.count, 31)
        let scan = Task { () -> ScannedDevice? in
            for try await d in central.scan(active: false, phys: [.le1M, .leCoded]) { return d }
            return nil
        }
        let parameters = try await t.controller.waitForCommand(.leSetExtendedScanParameters)
        XCTAssertEqual(parameters.parameters[2], LEPHYSet([.le1M, .leCoded]).rawValue)
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetExtendedScanEnable && $0.parameters.first == 1 }
        func report(_ status: AdvertisingDataStatus, _ bytes: [UInt8]) -> LEAdvertisingReport {
            var properties: AdvertisingEventProperties = [.connectable]
            properties.dataStatus = status
            return LEAdvertisingReport(properties: properties, address: device, primaryPHY: .leCoded, secondaryPHY: .le2M,
                                       advertisingSID: 3, txPower: 0, rssi: -70, periodicAdvertisingInterval: 0, data: bytes)
        }
        await t.controller.sendNow(.le(.extendedAdvertisingReport([report(.incompleteMoreToCome, Array(data[..<20]))])))
        await t.controller.sendNow(.le(.extendedAdvertisingReport([report(.complete, Array(data[20...]))])))
        let found = try await XCTUnwrapAsync(try await scan.value)
        XCTAssertEqual(found.advertisement.localName, name)
        XCTAssertEqual(found.extended?.advertisingSID, 3)
        XCTAssertEqual(found.extended?.primaryPHY, .leCoded)
        XCTAssertFalse(found.isTruncated)

        let peripheral = try await central.connect(device, timeout: .seconds(5), phys: [.le1M, .leCoded])
        let create = try await XCTUnwrapAsync(await t.controller.commands.last { $0.opcode == .leExtendedCreateConnection })
        XCTAssertEqual(create.parameters[9], LEPHYSet([.le1M, .le2M, .leCoded]).rawValue)
        XCTAssertEqual(peripheral.address, device)
        // The link's PHY read once it was made (it started on LE Coded), and its channel
        // selection algorithm as the controller's event said; each within a bounded number of turns.
        for _ in 0..<100_000 where peripheral.phy != .leCoded || peripheral.channelSelectionAlgorithm == nil { await Task.yield() }
        XCTAssertEqual(peripheral.phy, .leCoded)
        XCTAssertEqual(peripheral.channelSelectionAlgorithm, 2)
        let legacy = await sent(t, of: Self.legacyOpcodes)
        XCTAssertEqual(legacy, [], "legacy commands mixed in")
        await central.close()
    }

    /// On a controller that does not list them: the legacy commands, as before, and a scan on
    /// LE Coded ends with `unsupported`.
    func testExtendedWhenSupportedOnAControllerWithoutThemUsesTheLegacyCommands() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd, configuration: configuration(.extendedWhenSupported))
        XCTAssertFalse(central.controllerInfo.supportsExtendedAdvertisingCommands)
        do {
            for try await _ in central.scan(phys: .leCoded) { break }
            XCTFail("a coded scan on a controller without the extended commands")
        } catch BLEError.unsupported {}
        let scan = Task { for try await _ in central.scan(active: false) { break } }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 1 }
        scan.cancel()
        let extended = await sent(t, of: Self.extendedOpcodes)
        XCTAssertEqual(extended, [])
        await central.close()
    }

    /// `.legacy`: the legacy commands, even on a controller that lists the extended ones.
    func testLegacyUsesTheLegacyCommandsEvenWhereTheExtendedOnesExist() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.listsExtendedAdvertisingCommands = true }
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd, configuration: configuration(.legacy))
        XCTAssertTrue(central.controllerInfo.supportsExtendedAdvertisingCommands)
        let scan = Task { for try await _ in central.scan(active: false) { break } }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 1 }
        scan.cancel()
        let peripheral = try await central.connect(device, timeout: .seconds(5))
        XCTAssertNil(peripheral.channelSelectionAlgorithm, "the fake controller sends no channel selection event for a legacy connection")
        let extended = await sent(t, of: Self.extendedOpcodes)
        let opcodes = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(opcodes.contains(.leReadPHY), "a legacy connection starts on LE 1M: nothing to read")
        XCTAssertEqual(extended, [])
        let legacy = await sent(t, of: Self.legacyOpcodes)
        XCTAssertTrue(legacy.contains(.leCreateConnection))
        await central.close()
    }
}
