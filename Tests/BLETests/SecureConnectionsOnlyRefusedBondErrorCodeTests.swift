@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// In Secure Connections Only mode a bond below level 4 does not encrypt the link (its key
/// request is answered negatively, finding 3), so for the server that client has no usable LTK:
/// an attribute needing encryption answers Insufficient Authentication, "pair", not Insufficient
/// Encryption, "encrypt with your bond" (Vol 3 Part C §10.3.1), which sends the client to a key
/// the server will refuse (our own central then fails the request instead of pairing again).
final class SecureConnectionsOnlyRefusedBondErrorCodeTests: XCTestCase {
    let central = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_C1), type: .public)

    func testAnAttributeNeedingEncryptionAsksAClientWithARefusedBondToPair() async throws {
        let store = InMemoryBondStore()
        let ltk = [UInt8](repeating: 0x5A, count: 16)
        // A legacy Just Works bond, made before the mode was switched on.
        try store.save(Bond(peer: central, peerLongTermKey: ltk, peerEDIV: 0x1234, peerRand: 0x0102_0304_0506_0708,
                            localLongTermKey: ltk, localEDIV: 0x4321, localRand: 0x0807_0605_0403_0201,
                            secureConnections: false, authenticated: false, keySize: 16))
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        config.security.pairing.secureConnectionsOnly = true
        let m = try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(BDAddress(rawValue: 0xC1_02_03_04_05_0C)),
                                                 configuration: config)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.readEncrypted], value: [0x42]),
        ]))
        let c = try XCTUnwrap(handles.characteristics.first)
        await t.centralConnects(from: central, handle: 0x0041)
        await m.waitForConnectedCentrals(1)

        // The bond's key is refused, as finding 3 wants.
        await t.controller.sendNow(.le(.longTermKeyRequest(handle: 0x0041, randomNumber: 0x0807_0605_0403_0201, encryptedDiversifier: 0x4321)))
        _ = try await t.controller.waitForCommand(.leLongTermKeyRequestNegativeReply, within: .seconds(5))

        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x0A] + le(c.valueHandle))
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { !$0.isEmpty }
        let answer = await t.controller.l2capPayloads(channel: 0x0004).first
        XCTAssertEqual(answer, [0x01, 0x0A] + le(c.valueHandle) + [0x05],
                       "Insufficient Authentication (pair), not Insufficient Encryption (0x0F) towards a key the server refuses")
        await m.close()
    }
}
