import XCTest
import BLEWire
@testable import BLEHost

/// Qualification-style PDU scripts for the GATT server (the shape of BlueZ's unit/test-gatt.c
/// server cases, with our own scripts). Each line is either
///
///     "C: 0a 0300"   a PDU the client sends, or
///     "S: 0b 0102"   the exact PDU the server must send next.
///
/// After every client PDU the server's answers must all be matched by the following S: lines
/// before the next C: line. Dynamic values are answered by `dynamicReads` / `dynamicWrites`
/// through `completeRead` / `completeWrite`, so scripts stay pure bytes. Other actions
/// (subscriptions, MTU changes, writes) collect in `events`.
struct GATTServerHarness {
    var server: ATTServer
    var database: GATTServerDatabase
    var security = LinkSecurity.none
    var now: Duration = .zero
    /// Answers for dynamic reads by handle: the value (the harness applies the offset) or an error.
    var dynamicReads: [UInt16: Result<[UInt8], ATTErrorCode>] = [:]
    /// Answers for dynamic writes by handle (success when absent).
    var dynamicWrites: [UInt16: Result<Void, ATTErrorCode>] = [:]
    /// Dynamic writes the server handed out: handle, offset, value, kind.
    var writes: [(handle: UInt16, offset: Int, value: [UInt8], kind: ServerAction.WriteKind)] = []
    /// Every action other than `.send`, `.read` and `.write`.
    var events: [ServerAction] = []
    /// PDUs sent and not yet matched by an S: line.
    var sent: [[UInt8]] = []

    init(database: GATTServerDatabase = GATTServerFixture.database(), server: ATTServer = ATTServer()) {
        self.database = database
        self.server = server
    }

    /// Feeds one client PDU and answers any application requests it causes.
    mutating func send(_ pdu: [UInt8]) {
        now += .milliseconds(10)
        absorb(server.receive(pdu, database: &database, security: security, now: now))
    }

    mutating func absorb(_ actions: [ServerAction]) {
        for action in actions {
            switch action {
            case let .send(bytes):
                sent.append(bytes)
            case let .read(id, handle, offset):
                let answer: Result<[UInt8], ATTErrorCode>
                switch dynamicReads[handle] ?? .failure(.unlikelyError) {
                case let .success(v):
                    answer = offset <= v.count ? .success(Array(v[offset...])) : .failure(.invalidOffset)
                case let .failure(e):
                    answer = .failure(e)
                }
                absorb(server.completeRead(id: id, result: answer, database: &database, security: security, now: now))
            case let .write(id, handle, value, offset, kind):
                writes.append((handle, offset, value, kind))
                if kind != .command {
                    let answer = dynamicWrites[handle] ?? .success(())
                    absorb(server.completeWrite(id: id, result: answer, database: &database, security: security, now: now))
                }
            default:
                events.append(action)
            }
        }
    }

    /// Notifies through the server with the harness's database and link security.
    mutating func notify(valueHandle: UInt16, value: [UInt8]) -> UpdateResult {
        server.notify(valueHandle: valueHandle, value: value, database: database, security: security)
    }

    /// Indicates through the server with the harness's database and link security.
    mutating func indicate(valueHandle: UInt16, value: [UInt8], id: UInt64, now: Duration) -> UpdateResult {
        server.indicate(valueHandle: valueHandle, value: value, id: id, now: now, database: database, security: security)
    }

    /// Runs a script (see the type's comment).
    mutating func run(_ script: [String], file: StaticString = #filePath, line: UInt = #line) {
        for (index, text) in script.enumerated() {
            let step = index + 1
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard trimmed.count >= 2 else { XCTFail("step \(step): empty line", file: file, line: line); continue }
            let body = String(trimmed.dropFirst(2))
            guard let bytes = [UInt8](hexString: body) else {
                XCTFail("step \(step): bad hex \(body)", file: file, line: line)
                continue
            }
            if trimmed.hasPrefix("C:") {
                XCTAssertTrue(sent.isEmpty, "step \(step): server sent \(sent.map(\.hexString)) not in the script",
                              file: file, line: line)
                sent.removeAll()
                send(bytes)
            } else if trimmed.hasPrefix("S:") {
                guard !sent.isEmpty else {
                    XCTFail("step \(step): expected the server to send \(bytes.hexString), it sent nothing", file: file, line: line)
                    continue
                }
                XCTAssertEqual(sent.removeFirst().hexString, bytes.hexString, "step \(step): server PDU", file: file, line: line)
            } else {
                XCTFail("step \(step): script line must start with C: or S:", file: file, line: line)
            }
        }
        XCTAssertTrue(sent.isEmpty, "server sent \(sent.map(\.hexString)) after the script ended", file: file, line: line)
        sent.removeAll()
    }
}

/// Little-endian hex of a handle or other 16-bit field, for script lines.
func le16(_ v: Int) -> String {
    [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)].hexString
}

/// The database most scripts run against. Handles (decimal):
///
///     1–5    GAP 1800: 2 decl, 3 Device Name "Test", 4 decl, 5 Appearance 0x0340
///     6–13   GATT 1801: 7 decl, 8 Service Changed, 9 CCCD, 10 decl, 11 Client Supported
///            Features, 12 decl, 13 Database Hash
///     14–38  primary AAA0:
///            15/16  AAA1 read|write|ext, stored "hello", 17 ext props (reliable write),
///                   18 user description "rw"
///            19/20  AAA2 read, stored 0x00…0x1D (30 octets, longer than MTU − 1)
///            21/22  AAA3 read|notify|indicate, stored 01, 23 CCCD
///            24/25  AAA4 read, encryption required, stored 42
///            26/27  AAA5 read, authentication required, stored 43
///            28/29  AAA6 read, authorization required, stored 44
///            30/31  AAA7 write only, stored empty, max 20
///            32/33  AAA8 read|write, dynamic, max 512
///            34/35  AAA9 read, dynamic (its handler fails in tests)
///            36/37  AAAA read|notify, stored 00, 38 CCCD
///     39–41  secondary 128-bit service S1: 40/41 char 128-bit C1 read, stored 1122
///     42–46  primary CCC0 including 39–41: 43 include, 44/45 CCC1 read stored 0102,
///            46 128-bit descriptor D1 read stored 09
enum GATTServerFixture {
    static let s1 = BluetoothUUID(string: "12345678-1234-5678-1234-56789abcdef0") ?? BluetoothUUID(0)
    static let c1 = BluetoothUUID(string: "12345678-1234-5678-1234-56789abcdef1") ?? BluetoothUUID(0)
    static let d1 = BluetoothUUID(string: "12345678-1234-5678-1234-56789abcdef2") ?? BluetoothUUID(0)
    static let longValue = (0..<30).map { UInt8($0) }

    static func database() -> GATTServerDatabase {
        var db = GATTServerDatabase(deviceName: "Test", appearance: 0x0340)
        do {
            try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xAAA0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA1), properties: [.read, .write], permissions: [.read, .write],
                                             value: Array("hello".utf8), extendedProperties: .reliableWrite, userDescription: "rw"),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA2), properties: [.read], permissions: [.read], value: longValue),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA3), properties: [.read, .notify, .indicate],
                                             permissions: [.read], value: [0x01]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA4), properties: [.read], permissions: [.readEncrypted], value: [0x42]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA5), properties: [.read], permissions: [.readAuthenticated], value: [0x43]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA6), properties: [.read], permissions: [.readAuthorized], value: [0x44]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA7), properties: [.write], permissions: [.write], value: [],
                                             maximumLength: 20),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA8), properties: [.read, .write], permissions: [.read, .write], value: nil),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA9), properties: [.read], permissions: [.read], value: nil),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAAA), properties: [.read, .notify], permissions: [.read], value: [0x00]),
            ]))
            try db.add(GATTServiceDefinition(uuid: s1, isPrimary: false, characteristics: [
                GATTCharacteristicDefinition(uuid: c1, properties: [.read], permissions: [.read], value: [0x11, 0x22]),
            ]))
            try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xCCC0), includes: [s1], characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xCCC1), properties: [.read], permissions: [.read], value: [0x01, 0x02],
                                             descriptors: [GATTDescriptorDefinition(uuid: d1, permissions: [.read], value: [0x09])]),
            ]))
        } catch {
            XCTFail("fixture: \(error)")
        }
        db.serviceChangedRange = nil
        return db
    }
}
