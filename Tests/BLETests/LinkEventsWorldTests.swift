import BLE
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// A link's event streams on both sides, between two of our hosts on the virtual radio in
/// virtual time: connection parameter updates (LE Connection Update Complete, Core spec Vol 4
/// Part E §7.7.65.3) and security events (a pairing, then encryption with the bond's key).
final class LinkEventsWorldTests: XCTestCase {
    func testBothSidesSeeAConnectionUpdateAndTheStreamsEndWithTheLink() async throws {
        try await VirtualWorld.run { world in
            let (manager, c, p, central) = try await ConnectionUpdateWorldTests.connected(world, central: VirtualControllerConfiguration())
            let centralSide = p.connectionParameterUpdates
            let peripheralSide = await manager.connectionParameterUpdates(for: c)
            let now = await manager.connectionParameters(of: c)
            XCTAssertEqual(now, p.connectionParameters)
            try await manager.requestConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400, for: c)
            var seenByPeripheral: LinkParameters?
            for await update in peripheralSide { seenByPeripheral = update; break }
            var seenByCentral: LinkParameters?
            for await update in centralSide { seenByCentral = update; break }
            XCTAssertEqual(seenByPeripheral?.interval, 24)
            XCTAssertEqual(seenByCentral?.interval, 24)
            XCTAssertEqual(seenByCentral?.supervisionTimeout, 400)

            // After the disconnect a new stream ends at once, and the manager knows no parameters.
            try await p.disconnect()
            var after = 0
            for await _ in p.connectionParameterUpdates { after += 1 }
            XCTAssertEqual(after, 0)
            for _ in 0..<100 where await manager.connectionParameters(of: c) != nil { try await world.clock.sleep(for: .milliseconds(10)) }
            let gone = await manager.connectionParameters(of: c)
            XCTAssertNil(gone)
            await central.close()
            await manager.close()
        }
    }

    func testAPairingIsAnEventOnBothSidesAndAReconnectionsEncryptionIsToo() async throws {
        try await VirtualWorld.run { world in
            let (manager, c, p, central) = try await ConnectionUpdateWorldTests.connected(world, central: VirtualControllerConfiguration())
            let centralSide = p.securityEvents
            let peripheralSide = await manager.securityEvents(for: c)
            let result = try await p.pair()
            var centralEvent: LinkSecurityEvent?
            for await e in centralSide { centralEvent = e; break }
            var peripheralEvent: LinkSecurityEvent?
            for await e in peripheralSide { peripheralEvent = e; break }
            XCTAssertEqual(centralEvent, .paired(result))
            guard case let .paired(theirs)? = peripheralEvent else { return XCTFail("\(String(describing: peripheralEvent))") }
            XCTAssertEqual(theirs.securityLevel, result.securityLevel)
            let level = await manager.securityLevel(of: c)
            XCTAssertEqual(level, result.securityLevel)

            // Encrypting again with the bond's key, without pairing: `.encrypted` at the bond's level.
            try await p.disconnect()
            let again = try await central.connect(p.address)
            let events = again.securityEvents
            try await again.encrypt()
            var encrypted: LinkSecurityEvent?
            for await e in events { encrypted = e; break }
            XCTAssertEqual(encrypted, .encrypted(result.securityLevel))
            try await again.disconnect()
            await central.close()
            await manager.close()
        }
    }
}
