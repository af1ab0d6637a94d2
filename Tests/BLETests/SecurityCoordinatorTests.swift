@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// The Security Manager part on its own, driven by a `SecurityDriver` double instead of a host:
/// a peripheral's answers to the controller's LTK Requests, what an Encryption Change makes of a
/// link and tells the driver, and a removed bond's consequences routed through the driver.
final class SecurityCoordinatorTests: XCTestCase {
    actor Driver: SecurityDriver, LinkTableDouble, RecordingDriver {
        nonisolated let configuration: HostConfiguration
        let security: SecurityCoordinator
        /// No controller answers here: every command counts as listed.
        let info: ControllerInfo? = nil
        nonisolated let clock: any BLEClock = SystemClock()
        var record = DriverRecord()
        var links = LinkTable()
        let ownDeviceAddress: DeviceAddress? = DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_01), type: .random)
        let ownIdentityAddress: DeviceAddress? = nil
        var background: [HCICommand] = []
        /// What the part asked the driver to route, in order.
        var routed: [String] = []

        init(store: InMemoryBondStore) {
            var c = HostConfiguration()
            c.security.bondStore = store
            configuration = c
            security = SecurityCoordinator(settings: c.security)
        }
        func cancelTask(_ id: UInt64) {}
        func sendInBackground(_ command: HCICommand, _ name: String) { background.append(command) }
        func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int { 0 }
        func disconnectInBackground(handle: UInt16, _ why: String) { routed.append("disconnect") }
        func report(_ event: PeripheralManagerEvent) {}
        func bondsChanged() { routed.append("bonds changed") }
        func forgetBondedClient(_ identity: DeviceAddress) { routed.append("forget \(identity)") }
        func linkEncrypted(handle: UInt16, bondIdentity: DeviceAddress?) {
            routed.append("encrypted 0x\(String(handle, radix: 16)) bond \(bondIdentity.map { "\($0)" } ?? "none")")
        }

        func connect(handle: UInt16, peer: DeviceAddress) {
            let parameters = LinkParameters(interval: 24, latency: 0, supervisionTimeout: 400)
            links[handle] = Link(id: UInt64(handle), handle: handle, peer: peer, role: .peripheral, parameters: parameters,
                                 clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30))),
                                 server: ATTServer(), observation: LinkObservation(parameters: parameters))
        }
        func ltkRequested(handle: UInt16) { security.longTermKeyRequested(handle: handle, ediv: 0, rand: 0, self) }
        func encryptionChanged(handle: UInt16) { security.encryptionChanged(handle: handle, status: .success, enabled: true, self) }
        func removeBond(_ peer: DeviceAddress) throws -> Bool { try security.removeBond(peer, self) }
        func linkSecurity(_ handle: UInt16) -> (LinkSecurity, Bool)? { links[handle].map { ($0.security, $0.encryptedWithBondKey) } }
        func clearRouted() { routed = [] }
    }

    let central = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5C), type: .public)
    let stranger = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5D), type: .public)
    let ltk = [UInt8](repeating: 0x5C, count: 16)

    func bondedStore() throws -> InMemoryBondStore {
        let store = InMemoryBondStore()
        try store.save(Bond(peer: central, peerLongTermKey: ltk, localLongTermKey: ltk, secureConnections: true, authenticated: true, keySize: 16))
        return store
    }

    /// The bonded central gets its key; a central with no bond a negative reply at once.
    func testTheLTKRequestIsAnsweredWithTheBondsKeyOrRefused() async throws {
        let d = Driver(store: try bondedStore())
        await d.connect(handle: 0x41, peer: central)
        await d.connect(handle: 0x42, peer: stranger)
        await d.ltkRequested(handle: 0x41)
        await d.ltkRequested(handle: 0x42)
        let sent = await d.background
        XCTAssertEqual(sent.map(\.opcode), [.leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply])
        XCTAssertEqual(Array(sent[0].parameters.dropFirst(2)), ltk)
    }

    /// Encrypted with the bond's key: the link takes the key's worth and speaks for the bond,
    /// and the driver routes the encryption with the bond's identity.
    func testAnEncryptionWithTheBondsKeyMarksTheLinkAndIsRouted() async throws {
        let d = Driver(store: try bondedStore())
        await d.connect(handle: 0x41, peer: central)
        await d.ltkRequested(handle: 0x41)
        await d.encryptionChanged(handle: 0x41)
        let (security, withBond) = try await XCTUnwrapAsync(await d.linkSecurity(0x41))
        XCTAssertTrue(security.encrypted)
        XCTAssertTrue(security.authenticated)
        XCTAssertEqual(security.keySize, 16)
        XCTAssertTrue(withBond)
        let routed = await d.routed
        XCTAssertEqual(routed, ["encrypted 0x41 bond \(central)"])
    }

    /// A bond removed: the driver routes that the bonds changed and that the client's state on
    /// our server is no longer its own; a link its key encrypted no longer speaks for it.
    func testARemovedBondIsRoutedAndItsLinksNoLongerSpeakForIt() async throws {
        let d = Driver(store: try bondedStore())
        await d.connect(handle: 0x41, peer: central)
        await d.ltkRequested(handle: 0x41)
        await d.encryptionChanged(handle: 0x41)
        await d.clearRouted()
        let removed = try await d.removeBond(central)
        XCTAssertTrue(removed)
        let routed = await d.routed
        XCTAssertEqual(routed, ["forget \(central)", "bonds changed"])
        let withBond = await d.linkSecurity(0x41)?.1
        XCTAssertEqual(withBond, false)
    }
}
