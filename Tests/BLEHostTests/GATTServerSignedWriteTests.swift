import XCTest
import BLEWire
import BLETestSupport
@testable import BLEHost

/// The server's side of Signed Write Without Response (Core spec Vol 3 Part G §4.9.2, Vol 3
/// Part F §3.4.5.4, Vol 3 Part C §10.4.2): `verifySignedWrite` accepts only a well-formed,
/// correctly signed write with a fresh counter to an attribute that takes it, over an
/// unencrypted link, and every refusal leaves the database as it was.
final class GATTServerSignedWriteTests: XCTestCase {
    static let csrk = hexBytes("505E42DF 9691EC72 D31FCDFB EB641B61")

    struct Fixture {
        var server = ATTServer()
        var database = GATTServerDatabase(deviceName: "T", appearance: 0)
        var signed: UInt16 = 0
        var signedAuthenticated: UInt16 = 0
        var plain: UInt16 = 0
        var dynamic: UInt16 = 0
        var authorized: UInt16 = 0

        init() throws {
            let h = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC5C0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC5C1), properties: [.read, .authenticatedSignedWrites],
                                             permissions: [.read, .writeSigned], value: Array("old".utf8), maximumLength: 8),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC5C2), properties: [.read, .authenticatedSignedWrites],
                                             permissions: [.read, .writeSigned, .writeAuthenticated], value: [0]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC5C3), properties: [.read, .writeWithoutResponse],
                                             permissions: [.read, .write], value: [0]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC5C4), properties: [.authenticatedSignedWrites],
                                             permissions: [.writeSigned], value: nil, maximumLength: 4),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC5C5), properties: [.authenticatedSignedWrites],
                                             permissions: [.writeSigned, .writeAuthorized], value: [0]),
            ]))
            signed = h.characteristics[0].valueHandle
            signedAuthenticated = h.characteristics[1].valueHandle
            plain = h.characteristics[2].valueHandle
            dynamic = h.characteristics[3].valueHandle
            authorized = h.characteristics[4].valueHandle
        }

        func verify(_ pdu: [UInt8], key: ATTPeerSigningKey? = Fixture.key(), security: LinkSecurity = .none)
            -> Result<ATTVerifiedSignedWrite, ATTSignedWriteRefusal> {
            server.verifySignedWrite(pdu, signingKey: key, database: database, security: security)
        }

        static func key(last: UInt32? = nil, authenticated: Bool = false, keySize: Int = 16) -> ATTPeerSigningKey {
            ATTPeerSigningKey(key: GATTServerSignedWriteTests.csrk, lastCounter: last, authenticated: authenticated, keySize: keySize)
        }
    }

    static func pdu(_ handle: UInt16, _ value: [UInt8], counter: UInt32, key: [UInt8] = csrk) throws -> [UInt8] {
        try SignedWriteWithoutResponse.pdu(handle: handle, value: value, mtu: 23, key: key, counter: counter).encode()
    }

    func testAGoodSignedWriteIsVerifiedThenAppliedAndNeverAnswered() throws {
        var f = try Fixture()
        let pdu = try Self.pdu(f.signed, Array("new".utf8), counter: 5)
        let verified = try f.verify(pdu, key: Fixture.key(last: 4)).get()
        XCTAssertEqual(verified.handle, f.signed)
        XCTAssertEqual(verified.value, Array("new".utf8))
        XCTAssertEqual(verified.counter, 5)
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("old".utf8), "verifying changes nothing")
        let actions = f.server.applySignedWrite(verified, database: &f.database, security: .none, now: .seconds(1))
        XCTAssertEqual(actions, [.valueWritten(handle: f.signed, value: Array("new".utf8))], "no PDU goes back")
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("new".utf8))
        // The first write from a client with no counter yet takes any counter, 0 included.
        XCTAssertNoThrow(try f.verify(try Self.pdu(f.signed, [1], counter: 0), key: Fixture.key(last: nil)).get())
    }

    func testBlueZsSignedWriteVectorIsAccepted() throws {
        // sign_att_5: handle 0x0012, value 13 37, counter 1, under this CSRK.
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xD000), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xD001), properties: [.read], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xD002), properties: [.authenticatedSignedWrites],
                                         permissions: [.read, .writeSigned], value: [0]),
        ]))
        let handle = h.characteristics[1].valueHandle
        XCTAssertEqual(handle, 0x0012, "the fixture reaches the vector's handle")
        let server = ATTServer()
        let pdu = hexBytes("d2 1200 1337 01000000 f1871e93 3c900ff2")
        let verified = try server.verifySignedWrite(pdu, signingKey: Fixture.key(last: 0), database: db, security: .none).get()
        XCTAssertEqual(verified.value, [0x13, 0x37])
        XCTAssertEqual(verified.counter, 1)
    }

    func testForgeriesReplaysAndStrangersAreIgnoredAndChangeNothing() throws {
        var f = try Fixture()
        let good = try Self.pdu(f.signed, Array("new".utf8), counter: 7)
        var wrongMAC = good
        wrongMAC[wrongMAC.count - 1] ^= 0x01
        var wrongValue = good
        wrongValue[3] ^= 0x20
        var wrongCounter = good
        wrongCounter[wrongCounter.count - 12] = 8  // the counter is signed: raising it breaks the MAC
        let otherKey = try Self.pdu(f.signed, Array("new".utf8), counter: 7, key: [UInt8](repeating: 0x11, count: 16))
        let cases: [(String, [UInt8], ATTPeerSigningKey?, LinkSecurity, ATTSignedWriteRefusal)] = [
            ("wrong MAC", wrongMAC, Fixture.key(last: 6), .none, .badSignature),
            ("value changed in flight", wrongValue, Fixture.key(last: 6), .none, .badSignature),
            ("counter raised in flight", wrongCounter, Fixture.key(last: 6), .none, .badSignature),
            ("signed with another CSRK", otherKey, Fixture.key(last: 6), .none, .badSignature),
            ("replay of the last accepted", good, Fixture.key(last: 7), .none, .replayed(counter: 7, last: 7)),
            ("counter going back", good, Fixture.key(last: 100), .none, .replayed(counter: 7, last: 100)),
            ("unknown peer: no CSRK", good, nil, .none, .noSigningKey),
            ("encrypted link", good, Fixture.key(last: 6), LinkSecurity(encrypted: true, hasLongTermKey: true), .encryptedLink),
            // One octet cut off: the last 12 octets are then taken for the signature, which fails.
            ("one octet short", Array(good.prefix(good.count - 1)), Fixture.key(), .none, .badSignature),
            ("an 11-octet signature", Array(good.prefix(3)) + Array(good.suffix(11)), Fixture.key(), .none, .malformed),
            ("no handle", [0xD2, 0x10], Fixture.key(), .none, .malformed),
            ("opcode only", [0xD2], Fixture.key(), .none, .malformed),
            ("empty", [], Fixture.key(), .none, .malformed),
            ("a Write Command", hexBytes("52 \(le16(Int(f.signed))) 01"), Fixture.key(), .none, .malformed),
        ]
        for (name, pdu, key, security, expected) in cases {
            XCTAssertEqual(f.verify(pdu, key: key, security: security), .failure(expected), name)
            // Fed to the general entry point too, nothing is answered or written.
            XCTAssertEqual(f.server.receive(pdu, database: &f.database, security: security, now: .seconds(1)), [], name)
        }
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("old".utf8))
        // A good one still passes after all that.
        XCTAssertNoThrow(try f.verify(good, key: Fixture.key(last: 6)).get())
    }

    func testReceiveNeverAppliesASignedWriteItself() throws {
        var f = try Fixture()
        let good = try Self.pdu(f.signed, Array("new".utf8), counter: 1)
        XCTAssertEqual(f.server.receive(good, database: &f.database, security: .none, now: .seconds(1)), [])
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("old".utf8), "only verify + apply, with the bond, write")
    }

    func testPermissions() throws {
        let f = try Fixture()
        // No writeSigned: a signature does not open an attribute that does not take one.
        XCTAssertEqual(f.verify(try Self.pdu(f.plain, [1], counter: 1)), .failure(.refused(f.plain, .writeNotPermitted)))
        XCTAssertEqual(f.verify(try Self.pdu(0x00F0, [1], counter: 1)), .failure(.invalidHandle(0x00F0)))
        // writeAuthenticated: only a CSRK from an authenticated pairing (mode 2 level 2).
        let auth = try Self.pdu(f.signedAuthenticated, [1], counter: 1)
        XCTAssertEqual(f.verify(auth, key: Fixture.key(authenticated: false)), .failure(.refused(f.signedAuthenticated, .insufficientAuthentication)))
        XCTAssertNoThrow(try f.verify(auth, key: Fixture.key(authenticated: true)).get())
        // The key-size policy applies to the pairing that gave the CSRK.
        var strict = LinkSecurity.none
        strict.requiredKeySize = 16
        XCTAssertEqual(f.verify(try Self.pdu(f.signed, [1], counter: 1), key: Fixture.key(keySize: 7), security: strict),
                       .failure(.refused(f.signed, .encryptionKeySizeTooShort)))
        // Authorization is still the application's.
        let authorized = try Self.pdu(f.authorized, [1], counter: 1)
        XCTAssertEqual(f.verify(authorized), .failure(.refused(f.authorized, .insufficientAuthorization)))
        XCTAssertNoThrow(try f.verify(authorized, security: LinkSecurity(authorized: true)).get())
        // A value the attribute cannot hold is refused before its counter could be recorded.
        XCTAssertEqual(f.verify(try Self.pdu(f.signed, [UInt8](repeating: 1, count: 8), counter: 1)).map(\.counter), .success(1))
        XCTAssertEqual(f.verify(try SignedWriteWithoutResponse.pdu(handle: f.signed, value: [UInt8](repeating: 1, count: 9), mtu: 64,
                                                                   key: Self.csrk, counter: 1).encode()),
                       .failure(.refused(f.signed, .invalidAttributeValueLength)))
    }

    /// A value that takes signed writes needs encryption for any other write: unsigned writes
    /// on an unencrypted link are refused, and on an encrypted link a plain Write Command (what
    /// §4.9.2 tells the client to send there) is applied.
    func testPlainWritesToASignedValueNeedEncryption() throws {
        var f = try Fixture()
        var h = GATTServerHarness(database: f.database)
        let handle = le16(Int(f.signed))
        h.run(["C: 12 \(handle) 01", "S: 01 12 \(handle) 05", "C: 52 \(handle) 02"])
        h.security = LinkSecurity(hasLongTermKey: true)
        h.run(["C: 12 \(handle) 01", "S: 01 12 \(handle) 0f"])
        XCTAssertEqual(h.database.value(forHandle: f.signed), Array("old".utf8))
        h.security = LinkSecurity(encrypted: true, hasLongTermKey: true)
        h.run(["C: 52 \(handle) 6e6577", "C: 0a \(handle)", "S: 0b 6e6577"])
        f.database = h.database
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("new".utf8))
    }

    func testADynamicValueGoesToTheApplicationAsASignedCommand() throws {
        var f = try Fixture()
        let verified = try f.verify(try Self.pdu(f.dynamic, [9, 8], counter: 3)).get()
        let actions = f.server.applySignedWrite(verified, database: &f.database, security: .none, now: .seconds(1))
        guard actions.count == 1, case let .write(_, handle, value, offset, kind) = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(handle, f.dynamic)
        XCTAssertEqual(value, [9, 8])
        XCTAssertEqual(offset, 0)
        XCTAssertEqual(kind, .signedCommand)
        XCTAssertEqual(f.verify(try Self.pdu(f.dynamic, [1, 2, 3, 4, 5], counter: 4)), .failure(.refused(f.dynamic, .invalidAttributeValueLength)))
    }

    func testApplyingChecksTheLinkAgain() throws {
        var f = try Fixture()
        let verified = try f.verify(try Self.pdu(f.signed, [1], counter: 3)).get()
        // Encrypted in between (cannot happen inside one actor turn, but apply does not trust it).
        XCTAssertEqual(f.server.applySignedWrite(verified, database: &f.database, security: LinkSecurity(encrypted: true), now: .seconds(1)), [])
        XCTAssertEqual(f.database.value(forHandle: f.signed), Array("old".utf8))
    }
}
