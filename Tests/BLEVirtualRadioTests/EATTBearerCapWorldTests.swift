@testable import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// How many Enhanced ATT bearers a link gets when the application opens some itself
/// (Core spec Vol 3 Part G §5.3, Vol 3 Part A §4.25; review finding 8): the background set-up
/// tops the link up to `HostConfiguration.enhancedATTBearers` counting the bearers already open
/// or being opened on request, so an explicit open on an unencrypted link (refused, paired,
/// retried) does not get the background's bearers on top of its own.
final class EATTBearerCapWorldTests: XCTestCase {
    func testAnExplicitOpenThatCausesPairingIsNotToppedUpByTheBackgroundSetUp() async throws {
        try await VirtualWorld.run { world in
            var peripheral = HostConfiguration()
            peripheral.offersEnhancedATT = true
            peripheral.security.agent = FixedPairingAgent(confirms: true)
            var central = HostConfiguration()
            central.security.agent = FixedPairingAgent(confirms: true)
            central.enhancedATTBearers = 2
            let (manager, device) = try await world.addPeripheralManager(name: "Cap", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Cap").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (c, _) = try await world.addCentral(configuration: central)
            let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))

            // Refused on the unencrypted link, paired (which starts the background set-up), opened.
            let opened = try await p.host.openEnhancedATTBearers(linkID: p.linkID, count: 3)
            XCTAssertEqual(opened.count, 3)
            let settled = await p.enhancedATTBearersSettled()
            _ = try await p.discoverServices()
            XCTAssertEqual(settled, 3, "the 3 asked for already exceed the configured 2: the background opens none")
            let now = await p.enhancedATTBearerCount()
            XCTAssertEqual(now, 3)
            let theirs = await EATTSeamWorldTests.bearers(manager.host)
            XCTAssertEqual(theirs?.cids.count, 3)
            await c.close()
            await manager.close()
        }
    }

    func testTheBackgroundSetUpAloneOpensTheConfiguredCount() async throws {
        try await VirtualWorld.run { world in
            var peripheral = HostConfiguration()
            peripheral.offersEnhancedATT = true
            peripheral.security.agent = FixedPairingAgent(confirms: true)
            var central = HostConfiguration()
            central.security.agent = FixedPairingAgent(confirms: true)
            central.enhancedATTBearers = 2
            let (manager, device) = try await world.addPeripheralManager(name: "Cap2", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Cap2").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (c, _) = try await world.addCentral(configuration: central)
            let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            _ = try await p.pair()
            let settled = await p.enhancedATTBearersSettled()
            XCTAssertEqual(settled, 2)
            await c.close()
            await manager.close()
        }
    }
}
