import BLE
import BLEHost
import BLERuntime
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// Review 25b: 86dd9cb makes a bond replaced by a new pairing forget what its client left on
/// the server (`forgetBondedClient` after `.store`), "so a device that bonds again under that
/// identity starts from its own link's state". But a re-pairing is stored only from an address
/// the old bond answers to, and that address already restored the old bond's features and
/// change awareness onto the link at connection (`bondedClientConnected`); the forget clears the
/// host's dictionaries, not the link, and when the link closes `rememberChangeAwareness` writes
/// the old client's robust caching into the new bond. The removed-bond case
/// (`testARemovedBondTakesItsClientsKeptStateWithIt`) passes; the re-paired one does not.
final class GATTCacheRepairedBondClientStateWorldTests: XCTestCase {
    func testABondReplacedByANewPairingDoesNotPassItsClientsRobustCachingToTheNewBond() async throws {
        try await VirtualWorld.run { world in
            // Just Works may replace a Just Works bond (else the re-pairing is refused outright).
            var server = HostConfiguration()
            server.security.allowsUnauthenticatedBondReplacement = true
            let rig = try await GATTCacheRig.open(world, server: server)
            let address = rig.central.controllerInfo.address
            try await rig.bondAndLeave()  // robust caching on, in the old bond
            await rig.central.close()

            // The same address pairs again (a device that lost its keys, or a copier at the same
            // level): the new bond replaces the old one.
            let (again, _) = try await world.addCentral(address: address)
            let first = try await again.connect(rig.address)
            _ = try await first.pair()
            try await first.disconnect()
            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let p = try await again.connect(rig.address)
            do {
                let name = try await p.readValue(handle: 0x0003)  // the new bond's client never enabled robust caching
                XCTAssertEqual(String(decoding: name, as: UTF8.self), "Changing")
            } catch {
                XCTFail("the new bond's client is judged by the old bond's robust caching: \(error)")
            }
            try await p.disconnect()
            await again.close()
            await rig.manager.close()
        }
    }
}
