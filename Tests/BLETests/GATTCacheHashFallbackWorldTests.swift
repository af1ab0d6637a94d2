import BLE
import BLEHost
import BLERuntime
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// A Database Hash read that fails on a later connection (Core spec Vol 3 Part G §7.3,
/// §2.5.2): the client cannot check its cache, so it discovers instead and the user's request
/// still succeeds; an unbonded server's stored entry is left as it was (it is kept under the
/// hash it was read for, which nothing now contradicts). A read that times out ends the bearer
/// (Vol 3 Part F §3.3.3): the request fails with the timeout and the next connection is served
/// from the cache again. The server's answers are spoiled on the client's HCI
/// (`HashReadFaultTransport`), two whole hosts on the virtual radio in virtual time.
final class GATTCacheHashFallbackWorldTests: XCTestCase {
    static let deviceName = BluetoothUUID(0x2A00)

    /// A first connection that fills the unbonded server's entry under its hash, then gone.
    static func fill(_ rig: GATTCacheRig) async throws -> GATTCharacteristic {
        let p = try await rig.central.connect(rig.address)
        try await p.exchangeMTU()
        let located = try await p.characteristic(deviceName)
        let c = try XCTUnwrap(located)
        try await p.disconnect()
        XCTAssertEqual(rig.store.fileNames.count, 1, "\(rig.store.fileNames)")
        return c
    }

    /// Reconnects with the hash read spoiled by `fault`; the lookup is served by discovery.
    func assertDiscoveryServes(_ fault: HashReadFaultTransport.Fault, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let filled = try await Self.fill(rig)
            let stored = rig.store.fileNames
            let before = try rig.store.load(.unbonded(rig.address, databaseHash: try Self.hash(rig)))

            rig.faults.setFault(fault)
            let p = try await rig.central.connect(rig.address)
            try await p.exchangeMTU()
            let requestsBefore = try ATTRoundTrips(btsnoop: rig.capture.btsnoop).count
            let located = try await p.characteristic(Self.deviceName)
            XCTAssertEqual(located, filled, "found by discovery", file: file, line: line)
            XCTAssertEqual(rig.faults.spoiled, 1, "the hash read was spoiled", file: file, line: line)
            let value = try await p.readValue(for: try XCTUnwrap(located))
            XCTAssertEqual(value, Array("Changing".utf8), file: file, line: line)
            // Later lookups work too, from what this connection learned.
            let csf = try await p.characteristic(GATTUUID.clientSupportedFeatures)
            XCTAssertNotNil(csf, file: file, line: line)
            let all = try ATTRoundTrips(btsnoop: rig.capture.btsnoop)
            XCTAssertGreaterThanOrEqual(all.count, requestsBefore + 3, "hash read, search, read: not served from the entry: \(all)", file: file, line: line)
            try await p.disconnect()
            XCTAssertEqual(rig.store.fileNames, stored, "nothing stored without a hash to key it", file: file, line: line)
            let after = try rig.store.load(.unbonded(rig.address, databaseHash: try Self.hash(rig)))
            XCTAssertEqual(after, before, "the entry under the hash is as it was", file: file, line: line)
            await rig.close()
        }
    }

    /// The hash the entry was stored under (the only one in the store).
    static func hash(_ rig: GATTCacheRig) throws -> [UInt8] {
        let name = try XCTUnwrap(rig.store.fileNames.first)
        let hex = name.dropLast(GATTCacheKey.suffix.count).split(separator: "-").last.map(String.init) ?? ""
        return try XCTUnwrap([UInt8](hexString: hex))
    }

    func testAnATTErrorOnTheHashReadFallsBackToDiscovery() async throws {
        try await assertDiscoveryServes(.error(0x0E)) // Unlikely Error
    }

    func testAServerWithoutADatabaseHashIsDiscovered() async throws {
        try await assertDiscoveryServes(.error(0x0A)) // Attribute Not Found
    }

    /// After Service Changed on an unbonded server the next lookup reads the new hash to key
    /// what follows; when that read fails the lookup is still served, and nothing is stored.
    func testAFailedHashReadAfterServiceChangedStillServesTheLookup() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let (p, changes) = try await rig.connectedAndCached()
            let stored = rig.store.fileNames
            let handles = try await rig.manager.add(GATTCacheRig.addedService)
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, handles.range)
            rig.faults.setFault(.error(0x0E))
            let found = try await p.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertNotNil(found, "found though the new hash could not be read")
            XCTAssertEqual(rig.faults.spoiled, 1)
            let again = try await p.characteristic(Self.deviceName)
            XCTAssertNotNil(again, "later lookups work too")
            try await p.disconnect()
            XCTAssertEqual(rig.store.fileNames, stored, "no entry for a database whose hash is unknown")
            await rig.close()
        }
    }

    /// A hash read the server never answers times out after 30 s of virtual time: the bearer
    /// is dead (§3.3.3), the request fails with the timeout, and the next connection, whose
    /// read is answered, is served from the entry.
    func testAHashReadThatTimesOutFailsTheRequestAndTheNextConnectionIsServed() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let filled = try await Self.fill(rig)
            rig.faults.setFault(.silence)
            let p = try await rig.central.connect(rig.address)
            do {
                _ = try await p.characteristic(Self.deviceName)
                XCTFail("no answer: the transaction times out")
            } catch BLEError.gatt(.timeout) {}
            rig.faults.setFault(nil)
            for _ in 0..<100 where p.disconnectReason == nil { try await world.clock.sleep(for: .milliseconds(100)) }
            XCTAssertNotNil(p.disconnectReason, "the timed-out bearer's link is closed")
            let next = try await rig.central.connect(rig.address)
            try await next.exchangeMTU()
            let requestsBefore = try ATTRoundTrips(btsnoop: rig.capture.btsnoop).count
            let located = try await next.characteristic(Self.deviceName)
            XCTAssertEqual(located, filled)
            let all = try ATTRoundTrips(btsnoop: rig.capture.btsnoop)
            XCTAssertEqual(all.count, requestsBefore + 1, "the hash read only: \(all)")
            try await next.disconnect()
            await rig.close()
        }
    }
}
