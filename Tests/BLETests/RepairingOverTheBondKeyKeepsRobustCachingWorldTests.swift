import BLE
import BLEHost
import BLERuntime
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// Review 25c: faafe32 has a re-pairing drop the Client Supported Features restored from the
/// old bond (`forgetRestoredFeatures` after `.store`), for a copier of the address. It drops
/// them also when the link had proved the old bond's key first (encrypted with it), i.e. when
/// the very client that enabled them pairs again (to raise its level, say). That client need
/// not write them again (§7.2: they persist for a bonded client), and ours does not (its cache
/// records them written): robust caching is silently off from then on, and after a database
/// change its requests before encryption are served from the new layout instead of being
/// answered Database Out Of Sync (§2.5.2.1). The CCCDs restored on the same encryption are kept
/// and go into the new bond; the features are not.
final class RepairingOverTheBondKeyKeepsRobustCachingWorldTests: XCTestCase {
    func testAClientThatPairsAgainOverItsBondsKeyKeepsItsRobustCaching() async throws {
        try await VirtualWorld.run { world in
            var server = HostConfiguration()
            server.security.allowsUnauthenticatedBondReplacement = true
            let rig = try await GATTCacheRig.open(world, server: server)
            try await rig.bondAndLeave()  // robust caching on, kept with the bond

            // Back, encrypted with the bond's key (the proof it is that client), then paired again.
            let p = try await rig.central.connect(rig.address)
            try await p.encrypt()
            _ = try await p.pair()
            await p.completeCaching()  // as an application would; the cache says the features are written
            try await p.disconnect()

            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let again = try await rig.central.connect(rig.address)
            try await GATTCacheBondedClientWorldTests.assertOutOfSyncBeforeEncryption(again)
            try await again.disconnect()
            await rig.close()
        }
    }
}
