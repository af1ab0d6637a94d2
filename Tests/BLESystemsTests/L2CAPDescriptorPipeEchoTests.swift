import BLE
import BLEHost
import BLESystems
import BLEVirtual
import XCTest

/// `ble l2cap listen --echo` and `ble serve --l2cap` (L2CAPDescriptorPipe.echo): every byte goes back,
/// even when the peer's MTU is smaller than ours (an SDU of ours need not fit in one of theirs).
final class L2CAPDescriptorPipeEchoTests: XCTestCase {
    func testAnSDULongerThanThePeersMTUIsEchoedInPieces() async throws {
        try await VirtualWorld.run { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Echo")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Echo").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let listener = try await manager.listenL2CAP(psm: 0x80, parameters: CreditBasedChannelParameters(mtu: 512, mps: 247, initialCredits: 8))
            let echo = Task(executorPreference: world.clock.taskExecutor) { () -> (any Error)? in
                var incoming = listener.makeAsyncIterator()
                guard let served = await incoming.next() else { return nil }
                do { _ = try await L2CAPDescriptorPipe.echo(served) } catch { return error }
                return nil
            }
            let (central, _) = try await world.addCentral()
            let p = try await central.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            let channel = try await p.openL2CAPChannel(psm: 0x80, parameters: CreditBasedChannelParameters(mtu: 100, mps: 50, initialCredits: 8))
            let sdu = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
            try await channel.send(sdu)
            var back: [UInt8] = []
            for try await piece in channel {
                XCTAssertLessThanOrEqual(piece.count, 100)
                back += piece
                if back.count >= sdu.count { break }
            }
            XCTAssertEqual(back, sdu)
            await channel.close()
            let error = await echo.value
            XCTAssertNil(error, "the echo ends with the close: \(String(describing: error))")
            await central.close()
            await manager.close()
        }
    }
}
