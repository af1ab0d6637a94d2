import XCTest
import BLEWire
@testable import BLEHost

/// The per-update check reads an attribute's permissions where they lie
/// (`GATTServerDatabase.permissions(at:)`) instead of copying the attribute out. It
/// must judge exactly as the rule says: a value's read requirements (Vol 3 Part F §3.2.5,
/// §3.4.1.1) against the link's current security, or the client counts as not subscribed.
final class GATTServerUpdateCheckTests: XCTestCase {
    func testPermissionsInPlaceAreTheAttributesOwn() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        _ = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.readEncrypted], value: [1]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.notify], permissions: [.readAuthorized, .write], value: nil),
        ]))
        let last = try XCTUnwrap(db.attributes.last?.handle)
        for handle in UInt16(0)...(last + 2) {
            XCTAssertEqual(db.permissions(at: handle), db.attribute(at: handle)?.permissions, "handle \(handle)")
        }
    }

    func testDeliverableSubscriptionFollowsTheReadRequirementsForEveryCombination() throws {
        let bits: [AttributePermissions] = [.read, .readEncrypted, .readAuthenticated, .readAuthorized]
        for mask in 0..<(1 << bits.count) {
            let permissions = AttributePermissions(bits.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element))
            var db = GATTServerDatabase(deviceName: "T", appearance: 0)
            let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.notify, .indicate], permissions: permissions, value: [1]),
            ]))
            let valueHandle = h.characteristics[0].valueHandle
            for cccd: UInt16 in [0, 1, 2, 3] {
                var server = ATTServer()
                server.restoreSubscriptions([valueHandle: cccd])
                for encrypted in [false, true] {
                    for authenticated in [false, true] {
                        for authorized in [false, true] {
                            for keySize in [7, 16] {
                                let security = LinkSecurity(encrypted: encrypted, authenticated: authenticated, authorized: authorized,
                                                            keySize: keySize, requiredKeySize: 16)
                                // The rule, stated independently of the code under test.
                                let needsEncryption = permissions.contains(.readEncrypted) || permissions.contains(.readAuthenticated)
                                let passes = (!needsEncryption || (encrypted && keySize >= 16))
                                    && (!permissions.contains(.readAuthenticated) || authenticated)
                                    && (!permissions.contains(.readAuthorized) || authorized)
                                XCTAssertEqual(server.deliverableSubscription(valueHandle: valueHandle, database: db, security: security),
                                               passes ? cccd : 0, "\(permissions) cccd \(cccd) \(security)")
                            }
                        }
                    }
                }
            }
            // A handle with no attribute is nobody's subscription.
            var server = ATTServer()
            server.restoreSubscriptions([0x7FFF: 1])
            XCTAssertEqual(server.deliverableSubscription(valueHandle: 0x7FFF, database: db, security: LinkSecurity(encrypted: true)), 0)
        }
    }
}
