@testable import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// What a hostile Enhanced ATT peer cannot make our host hold without bound (Core spec Vol 3
/// Part G §5.3, Vol 3 Part A §10.2 credit-based flow control): the peer opens 0x0027 channels
/// itself as application channels on one of our hosts and writes raw ATT PDUs on them.
final class EATTBoundsWorldTests: XCTestCase {
    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let peripheral: Peripheral
    }

    static func rig(_ world: VirtualWorld) async throws -> Rig {
        var peripheral = HostConfiguration()
        peripheral.offersEnhancedATT = true
        peripheral.security.agent = FixedPairingAgent(confirms: true)
        var central = HostConfiguration()
        central.security.agent = FixedPairingAgent(confirms: true)
        central.security.raisesSecurityOnDemand = false
        let (manager, device) = try await world.addPeripheralManager(name: "Bounds", configuration: peripheral)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Bounds").build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
        _ = try await p.pair()
        return Rig(central: c, manager: manager, peripheral: p)
    }

    /// SDUs waiting for the peer's credits on the server's side of the bearer whose local CID is `cid`.
    static func queued(_ host: HostController, cid: UInt16) async -> Int {
        await host.run { host in
            host.connections.links.handles.first.map { host.queuedATTSDUs(handle: $0, bearer: .enhanced(cid: cid)) } ?? -1
        }
    }

    func testAPeerThatWithholdsCreditsCannotMakeTheServerQueueAnswersWithoutBound() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world)
            // One initial credit and, since the SDUs are never read, never an LE Flow Control
            // Credit: the first answer takes the only credit, none after it can leave.
            let bearers = try await rig.peripheral.openL2CAPChannels(psm: ATTBearerID.enhancedATTPSM, count: 1,
                                                                   parameters: CreditBasedChannelParameters(mtu: 64, mps: 64, initialCredits: 1))
            let bearer = try XCTUnwrap(bearers.first)
            let serverCID = bearer.info.remoteCID
            // 60 Read Requests of the first service declaration, more than the 16 credits the
            // server grants at a time.
            var senders: [Task<Void, Never>] = []
            for _ in 0..<60 {
                senders.append(Task(executorPreference: world.clock.taskExecutor) { try? await bearer.send([0x0A, 0x01, 0x00]) })
            }
            try await world.clock.sleep(for: .seconds(3))
            let queued = await Self.queued(rig.manager.host, cid: serverCID)
            XCTAssertGreaterThan(queued, 0, "the answers wait for the peer's credits")
            XCTAssertLessThanOrEqual(queued, 16, "no more answers than the credits the server granted")
            for s in senders { s.cancel() }
            await rig.central.close()
            await rig.manager.close()
        }
    }
}
