import BLE
import BLEHost
import BLERuntime
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// The set-up the GATT caching world tests share: a peripheral manager advertising on the
/// virtual radio, and a central on its own controller whose HCI is recorded (and can have its
/// Database Hash reads spoiled), with an in-memory attribute cache store.
struct GATTCacheRig {
    let manager: PeripheralManager
    /// Where the central reaches the manager.
    let address: DeviceAddress
    let central: Central
    let capture: RecordingTransport
    let faults: HashReadFaultTransport
    let store: InMemoryGATTCacheStore

    /// A service the tests add to change the server's database (Vol 3 Part G §2.5.2).
    static let addedService = GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
        GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.read], value: [0x2A]),
    ])

    /// Opens both hosts. `server` and `serverAddress` configure the manager; `central` and
    /// `centralAddress` the central (its cache store is always `store`).
    static func open(_ world: VirtualWorld, name: String = "Changing", serverAddress: BDAddress? = nil,
                     server: HostConfiguration = HostConfiguration(), central: HostConfiguration = HostConfiguration(),
                     centralAddress: OwnAddress = .public) async throws -> GATTCacheRig {
        let (manager, _) = try await world.addPeripheralManager(name: name, address: serverAddress, configuration: server)
        try await manager.startAdvertising(AdvertisingData.Builder().localName(name).build())
        let own = await manager.address
        let address = try XCTUnwrap(own)
        let store = InMemoryGATTCacheStore()
        let device = await world.radio.addDevice()
        let faults = HashReadFaultTransport(wrapping: device.transport, executor: world.clock.taskExecutor)
        let capture = RecordingTransport(wrapping: faults, executor: world.clock.taskExecutor)
        var configuration = central
        configuration.gattCache = store
        let opened = try await Central.open(transport: capture, address: centralAddress, clock: world.clock, configuration: configuration)
        return GATTCacheRig(manager: manager, address: address, central: opened, capture: capture, faults: faults, store: store)
    }

    /// A first connection that bonds and leaves the server set up for caching: MTU, pairing,
    /// the characteristics of `uuids` looked up (what it found is returned), Service Changed
    /// indications and robust caching enabled (`completeCaching`), then gone.
    @discardableResult
    func bondAndLeave(lookingUp uuids: [BluetoothUUID] = []) async throws -> [GATTCharacteristic?] {
        let first = try await central.connect(address)
        try await first.exchangeMTU()
        _ = try await first.pair()
        var found: [GATTCharacteristic?] = []
        for uuid in uuids { found.append(try await first.characteristic(uuid)) }
        await first.completeCaching()
        try await first.disconnect()
        return found
    }

    /// The central connected (MTU exchanged), subscribed to Service Changed (the ranges it
    /// announces), its lookup of FFF1 (absent until `addedService`) made and its caching complete:
    /// where the tests of a change begin.
    func connectedAndCached(file: StaticString = #filePath, line: UInt = #line) async throws -> (Peripheral, AsyncStream<ClosedRange<UInt16>>) {
        let p = try await central.connect(address)
        try await p.exchangeMTU()
        let changes = await p.servicesChanged()
        let absent = try await p.characteristic(BluetoothUUID(0xFFF1))
        XCTAssertNil(absent, "FFF1 before the change", file: file, line: line)
        await p.completeCaching()
        return (p, changes)
    }

    /// Closes both hosts.
    func close() async {
        await central.close()
        await manager.close()
    }
}
