import XCTest
import BLEWire
@testable import BLEHost

/// No one gets by notification or indication what they could not read: the CCCD of a value
/// that needs encryption, authentication or authorization to read needs the same to be written,
/// and at send time a link whose current security could not read the value counts as not
/// subscribed (a subscription restored from a bond, or made while the link was more secure).
final class GATTServerNotificationSecurityTests: XCTestCase {
    private static func database(_ permissions: AttributePermissions,
                                 properties: CharacteristicProperties = [.read, .notify, .indicate]) throws -> (GATTServerDatabase, GATTCharacteristicHandles) {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: properties, permissions: permissions, value: [0x42]),
        ]))
        return (db, h.characteristics[0])
    }

    private static func le(_ handle: UInt16) -> [UInt8] { [UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    /// The reviewer's case: a `.readAuthorized` value. Its read answers Insufficient
    /// Authorization, so does the write of its CCCD, and `notify` queues nothing for the link.
    func testAuthorizedValueIsNeitherSubscribedNorNotifiedWithoutAuthorization() throws {
        let (fixture, c) = try Self.database([.readAuthorized])
        var db = fixture
        let cccd = try XCTUnwrap(c.cccdHandle)
        var server = ATTServer()
        let open = LinkSecurity()
        XCTAssertEqual(server.receive([0x0A] + Self.le(c.valueHandle), database: &db, security: open, now: .zero),
                       [.send([0x01, 0x0A] + Self.le(c.valueHandle) + [0x08])], "read: Insufficient Authorization")
        XCTAssertEqual(server.receive([0x12] + Self.le(cccd) + [0x01, 0x00], database: &db, security: open, now: .zero),
                       [.send([0x01, 0x12] + Self.le(cccd) + [0x08])], "CCCD write: Insufficient Authorization")
        XCTAssertEqual(server.cccd(valueHandle: c.valueHandle), 0)
        XCTAssertEqual(server.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: open), .notSubscribed)
        XCTAssertNil(server.nextOutgoing())

        // Authorized, the client subscribes; withdrawn, it is not notified, though the CCCD stays.
        let authorized = LinkSecurity(authorized: true)
        XCTAssertEqual(server.receive([0x12] + Self.le(cccd) + [0x03, 0x00], database: &db, security: authorized, now: .zero),
                       [.subscriptionChanged(valueHandle: c.valueHandle, notifications: true, indications: true), .send([0x13])])
        XCTAssertEqual(server.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: open), .notSubscribed)
        XCTAssertEqual(server.indicate(valueHandle: c.valueHandle, value: [0x42], id: 1, now: .zero, database: db, security: open), .notSubscribed)
        XCTAssertNil(server.nextOutgoing())
        XCTAssertEqual(server.deliverableSubscription(valueHandle: c.valueHandle, database: db, security: open), 0)
        XCTAssertEqual(server.deliverableSubscription(valueHandle: c.valueHandle, database: db, security: authorized), 3)
        XCTAssertEqual(server.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: authorized), .queued)
        XCTAssertEqual(server.nextOutgoing(), [0x1B] + Self.le(c.valueHandle) + [0x42])
    }

    /// A CCCD restored from a bond (subscribed on an earlier, encrypted connection) on a link
    /// that is not encrypted yet: nothing is sent until the link is encrypted again.
    func testSubscriptionMadeEncryptedIsNotNotifiedOnALinkNotYetEncrypted() throws {
        let (fixture, c) = try Self.database([.readEncrypted])
        var db = fixture
        let cccd = try XCTUnwrap(c.cccdHandle)
        let encrypted = LinkSecurity(encrypted: true, hasLongTermKey: true)
        let notYet = LinkSecurity(hasLongTermKey: true)
        var earlier = ATTServer()
        XCTAssertEqual(earlier.receive([0x12] + Self.le(cccd) + [0x01, 0x00], database: &db, security: notYet, now: .zero),
                       [.send([0x01, 0x12] + Self.le(cccd) + [0x0F])], "CCCD write before encryption: Insufficient Encryption")
        XCTAssertEqual(earlier.receive([0x12] + Self.le(cccd) + [0x01, 0x00], database: &db, security: encrypted, now: .zero),
                       [.subscriptionChanged(valueHandle: c.valueHandle, notifications: true, indications: false), .send([0x13])])

        var restored = ATTServer()
        restored.restoreSubscriptions(earlier.subscriptions)
        XCTAssertEqual(restored.cccd(valueHandle: c.valueHandle), 1)
        XCTAssertEqual(restored.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: notYet), .notSubscribed)
        XCTAssertEqual(restored.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: .none), .notSubscribed)
        XCTAssertNil(restored.nextOutgoing())
        XCTAssertEqual(restored.notify(valueHandle: c.valueHandle, value: [0x42], database: db, security: encrypted), .queued)
        XCTAssertEqual(restored.nextOutgoing(), [0x1B] + Self.le(c.valueHandle) + [0x42])
    }

    /// An authenticated value, subscribed over an authenticated key, is not indicated over an
    /// unauthenticated one, nor over a key shorter than the server requires.
    func testAuthenticatedValueIsNotIndicatedOverAWeakerKey() throws {
        let (fixture, c) = try Self.database([.readAuthenticated])
        var db = fixture
        let cccd = try XCTUnwrap(c.cccdHandle)
        let strong = LinkSecurity(encrypted: true, authenticated: true, hasLongTermKey: true)
        var server = ATTServer()
        XCTAssertEqual(server.receive([0x12] + Self.le(cccd) + [0x02, 0x00], database: &db, security: strong, now: .zero),
                       [.subscriptionChanged(valueHandle: c.valueHandle, notifications: false, indications: true), .send([0x13])])
        let unauthenticated = LinkSecurity(encrypted: true, hasLongTermKey: true)
        XCTAssertEqual(server.indicate(valueHandle: c.valueHandle, value: [1], id: 1, now: .zero, database: db, security: unauthenticated), .notSubscribed)
        let short = LinkSecurity(encrypted: true, authenticated: true, hasLongTermKey: true, keySize: 7, requiredKeySize: 16)
        XCTAssertEqual(server.indicate(valueHandle: c.valueHandle, value: [1], id: 2, now: .zero, database: db, security: short), .notSubscribed)
        XCTAssertNil(server.nextOutgoing())
        XCTAssertEqual(server.indicate(valueHandle: c.valueHandle, value: [1], id: 3, now: .zero, database: db, security: strong), .queued)
        XCTAssertNotNil(server.nextOutgoing())
    }

    /// The send-side check asks only for the security a read would need, not whether the value
    /// is readable: a notify-only value (no read permission) is still notified.
    func testNotifyOnlyValueIsStillNotified() throws {
        let (fixture, c) = try Self.database([], properties: [.notify])
        var db = fixture
        let cccd = try XCTUnwrap(c.cccdHandle)
        var server = ATTServer()
        XCTAssertEqual(server.receive([0x12] + Self.le(cccd) + [0x01, 0x00], database: &db, security: .none, now: .zero),
                       [.subscriptionChanged(valueHandle: c.valueHandle, notifications: true, indications: false), .send([0x13])])
        XCTAssertEqual(server.notify(valueHandle: c.valueHandle, value: [7], database: db, security: .none), .queued)
    }

    /// The CCCD's write permissions follow every read requirement of its value.
    func testCCCDPermissionsFollowTheValuesReadRequirements() {
        XCTAssertEqual(GATTServerDatabase.cccdPermissions(for: [.read]), [.read, .write])
        XCTAssertEqual(GATTServerDatabase.cccdPermissions(for: [.readEncrypted]), [.read, .write, .writeEncrypted])
        XCTAssertEqual(GATTServerDatabase.cccdPermissions(for: [.readAuthenticated]), [.read, .write, .writeAuthenticated])
        XCTAssertEqual(GATTServerDatabase.cccdPermissions(for: [.readAuthorized]), [.read, .write, .writeAuthorized])
    }
}
