import BLE
import BLEHost
import BLESystems
import BLEVirtual
import XCTest

/// How `ble l2cap connect` reads the end of its channel (L2CAPDescriptorPipe.isDeliberateDisconnect): a
/// peer that ends the link once it has what it wanted (HCI reason 0x13, Vol 1 Part F §2.19) has
/// finished the conversation; a lost link or a broken rule has not.
final class L2CAPDescriptorPipeEndTests: XCTestCase {
    func testAPeerThatDisconnectsTheLinkEndsTheChannelDeliberately() async throws {
        try await VirtualWorld.run { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Pipe")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Pipe").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let listener = try await manager.listenL2CAP(psm: 0x80)
            let (central, _) = try await world.addCentral()
            let p = try await central.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            let channel = try await p.openL2CAPChannel(psm: 0x80)
            var incoming = listener.makeAsyncIterator()
            let served = await incoming.next()
            XCTAssertNotNil(served)
            for c in await manager.connectedCentrals { try await manager.disconnect(c) }
            do {
                for try await _ in channel {}
                XCTFail("the link went")
            } catch {
                XCTAssertTrue(L2CAPDescriptorPipe.isDeliberateDisconnect(error), "\(error)")
            }
            await central.close()
            await manager.close()
        }
        XCTAssertFalse(L2CAPDescriptorPipe.isDeliberateDisconnect(BLEError.disconnected(reason: .connectionTimeout)))
        XCTAssertFalse(L2CAPDescriptorPipe.isDeliberateDisconnect(BLEError.l2cap(.frameWithoutCredit)))
        XCTAssertFalse(L2CAPDescriptorPipe.isDeliberateDisconnect(CancellationError()))
    }
}
