import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEVirtualRadio
import BLEWire
import XCTest
import BLESystems

/// `ble serve`'s `a` key switches the advertising the user wants, whatever the radio is doing
/// at that moment.
final class ServeAdvertisingToggleTests: XCTestCase {
    static let data = AdvertisingData.Builder().flags(discoverableFlags).localName("Toggle").build()

    /// While a central is connected the radio is not advertising (legacy connectable
    /// advertising stops at a connection, Vol 6 Part B §4.4.2.2), though the user still wants it:
    /// `a` then means off, and it stays off after the central leaves.
    func testAToggleWhileConnectedSwitchesTheWantedStateOff() async throws {
        let states = try await VirtualWorld.run { world -> [Bool] in
            let (manager, _) = try await world.addPeripheralManager(name: "Toggle")
            let advertising = AdvertisingSwitch(manager: manager, data: Self.data, scanResponse: nil, wanted: true)
            try await manager.startAdvertising(Self.data, parameters: AdvertisingParameters(continueWhileConnected: false))
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "Toggle"), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            try await world.clock.sleep(for: .milliseconds(500))
            var states = [await manager.isAdvertising]
            let wanted = try await advertising.toggle()
            states += [wanted, await manager.isAdvertising]
            try await peripheral.disconnect()
            try await world.clock.sleep(for: .seconds(2))
            states.append(await manager.isAdvertising)
            states.append(try await advertising.toggle())
            states.append(await manager.isAdvertising)
            await central.close()
            await manager.close()
            return states
        }
        XCTAssertEqual(states, [false, false, false, false, true, true],
                       "radio off while connected; a → not wanted, still off, not restarted after the disconnect; a → on")
    }

    /// Started with --no-advertise: the first `a` switches it on, the next off.
    func testTogglingFromNotAdvertising() async throws {
        let states = try await VirtualWorld.run { world -> [Bool] in
            let (manager, _) = try await world.addPeripheralManager(name: "Toggle")
            let advertising = AdvertisingSwitch(manager: manager, data: Self.data, scanResponse: nil, wanted: false)
            var states = [advertising.isWanted, await manager.isAdvertising]
            states.append(try await advertising.toggle())
            states.append(await manager.isAdvertising)
            states.append(try await advertising.toggle())
            states.append(await manager.isAdvertising)
            await manager.close()
            return states
        }
        XCTAssertEqual(states, [false, false, true, true, false, false])
    }
}
