import BLE
import BLEWire

/// `ble serve test`: one custom service whose characteristics cover what interop and
/// conformance checks need (long, rw, read-only, write-only, notify, indicate,
/// encrypted, described; then authenticated and signed).
public struct TestServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "test"
    /// The line `ble serve --help` shows.
    public static let summary = "custom 128-bit service with long, rw, read-only, write-only, notify, indicate, encrypted, authenticated, described and signed-write characteristics"

    /// The service's 128-bit UUIDs differ only in bits 32–47: `n` picks one.
    public static func uuid(_ n: UInt16) -> BluetoothUUID {
        BluetoothUUID(high: 0x8F3C_0000_6C5A_4D2E | UInt64(n) << 32, low: 0x9B1F_2F0A_1C3B_4D5E)
    }
    /// The custom service.
    public static let service = uuid(0x0001)
    /// 512 bytes, read with Read Blob.
    public static let long = uuid(0x0002)
    /// Readable and writable, with reliable writes.
    public static let rw = uuid(0x0003)
    /// Readable only.
    public static let readOnly = uuid(0x0004)
    /// Writable only, with or without response.
    public static let writeOnly = uuid(0x0005)
    /// A counter notified every 500 ms.
    public static let notify = uuid(0x0006)
    /// A counter indicated every 500 ms.
    public static let indicate = uuid(0x0007)
    /// Readable only over an encrypted link.
    public static let encrypted = uuid(0x0008)
    /// A characteristic with a User Description descriptor.
    public static let described = uuid(0x0009)
    /// Readable only over a link encrypted with an authenticated (MITM-protected) key: Passkey
    /// Entry, Numeric Comparison or OOB pairing (Core spec Vol 3 Part C §10.3.1).
    public static let authenticated = uuid(0x000A)
    /// Readable by anyone; written by a bonded central with Signed Write Without Response over
    /// an unencrypted link (Core spec Vol 3 Part G §4.9.2), or by any write over an encrypted
    /// one. Starts `unsigned`, at most 20 bytes.
    public static let signed = uuid(0x000B)

    var handles: GATTServiceHandles?
    /// Database changes asked for and not yet made (TestServeProfile+DatabaseChange.swift).
    let databaseChanges = DatabaseChangeRequests()

    /// The profile with `ble serve`'s defaults (`configure` changes what the command gives).
    public init() {}

    /// Adds the service with its ten characteristics.
    public mutating func install(on manager: PeripheralManager) async throws {
        let longValue = (0..<512).map { UInt8($0 % 256) }
        handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.long, properties: [.read], permissions: [.read], value: longValue),
            GATTCharacteristicDefinition(uuid: Self.rw, properties: [.read, .write, .extendedProperties], permissions: [.read, .write], value: Array("hello".utf8),
                                         maximumLength: 512, extendedProperties: [.reliableWrite]),
            GATTCharacteristicDefinition(uuid: Self.readOnly, properties: [.read], permissions: [.read], value: Array("read only".utf8)),
            GATTCharacteristicDefinition(uuid: Self.writeOnly, properties: [.write, .writeWithoutResponse], permissions: [.write], value: [], maximumLength: 512),
            GATTCharacteristicDefinition(uuid: Self.notify, properties: [.notify], permissions: [], value: counterBytes(0)),
            GATTCharacteristicDefinition(uuid: Self.indicate, properties: [.indicate], permissions: [], value: counterBytes(0)),
            GATTCharacteristicDefinition(uuid: Self.encrypted, properties: [.read], permissions: [.readEncrypted], value: Array("secret".utf8)),
            GATTCharacteristicDefinition(uuid: Self.described, properties: [.read], permissions: [.read], value: [0x2A], userDescription: "described characteristic"),
            GATTCharacteristicDefinition(uuid: Self.authenticated, properties: [.read], permissions: [.readAuthenticated], value: Array("authenticated".utf8)),
            GATTCharacteristicDefinition(uuid: Self.signed, properties: [.read, .authenticatedSignedWrites], permissions: [.read, .writeSigned],
                                         value: Array("unsigned".utf8), maximumLength: 20),
        ]))
    }

    /// The name in the advertisement, the 128-bit UUID in the scan response.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).localName(name).build()
        let response = AdvertisingData.Builder().serviceUUIDs([Self.service]).build()
        return (data, response)
    }

    /// While enabled: a notified counter every 500 ms, and, independently, an indicated counter
    /// every 500 ms where the next indication waits until every central it went to has
    /// confirmed the previous one (or 5 s pass). A central that confirms slowly does not hold
    /// up the notifications. Meanwhile the database changes as asked (`requestDatabaseChange`,
    /// and a write of `databaseChangeCommand` to the write-only characteristic), in order.
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handles, let notifyHandle = handles.valueHandle(for: Self.notify), let indicateHandle = handles.valueHandle(for: Self.indicate),
              let writeOnlyHandle = handles.valueHandle(for: Self.writeOnly) else { return }
        let events = await manager.events
        let confirmed = Counter()
        let databaseChanges = self.databaseChanges
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case let .indicationConfirmed(_, h) where h == indicateHandle:
                        confirmed.increment()
                    case let .valueWritten(c, h, value) where h == writeOnlyHandle && value == Self.databaseChangeCommand:
                        databaseChanges.request(.write(c))
                    default:
                        break
                    }
                }
            }
            group.addTask { await changeDatabase(on: manager, log: log) }
            group.addTask {
                var notified: UInt32 = 0
                while !Task.isCancelled {
                    try await manager.clock.sleep(for: .milliseconds(500))
                    notified &+= 1
                    if try await manager.updateValueWaiting(counterBytes(notified), forHandle: notifyHandle) == 0 { notified = 0 }
                }
            }
            group.addTask {
                var indicated: UInt32 = 0
                while !Task.isCancelled {
                    try await manager.clock.sleep(for: .milliseconds(500))
                    indicated &+= 1
                    let before = confirmed.value
                    let sent = try await manager.updateValueWaiting(counterBytes(indicated), forHandle: indicateHandle)
                    if sent == 0 { indicated = 0; continue }
                    // The next indication waits for this one's confirmations (at most 5 s).
                    for _ in 0..<250 where confirmed.value < before + sent {
                        try await manager.clock.sleep(for: .milliseconds(20))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
