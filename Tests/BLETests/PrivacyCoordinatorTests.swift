@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `PrivacyCoordinator` on its own, driven by a `PrivacyDriver` double instead of a host: our
/// RPA and its renewal around a busy radio, peers' RPAs resolved with the bonds' IRKs, and the
/// controller's resolving list.
final class PrivacyCoordinatorTests: XCTestCase {
    actor Driver: PrivacyDriver, RecordingDriver {
        let privacy = PrivacyCoordinator()
        var now: Duration = .zero
        var record = DriverRecord()
        var info: ControllerInfo?
        var bonds: [Bond] = []
        var localIRK: [UInt8]? = [UInt8](repeating: 0x5A, count: 16)
        var ownRandomAddress: BDAddress?
        var isAdvertising = false
        var isScanning = false
        var isInitiating = false
        /// What happened to the radio, in order: "advertising paused", "scan paused"...
        var radio: [String] = []

        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            if cmd.opcode == .leReadResolvingListSize { record.commands.append(cmd); return [0, 8] }
            return try record.answer(cmd)
        }
        func useRandomAddress(_ address: BDAddress) { ownRandomAddress = address }
        func pauseAdvertising() async throws { radio.append("advertising paused") }
        func resumeAdvertising() async { radio.append("advertising resumed") }
        func withScanPaused(_ body: (isolated Driver) async -> Void) async {
            if isScanning { radio.append("scan paused") }
            await body(self)
            if isScanning { radio.append("scan resumed") }
        }

        func startPrivacy(rotation: Duration) async throws {
            try await privacy.start(rotation: rotation, irk: localIRK ?? [], self)
        }
        func advance(to t: Duration) {
            now = t
            privacy.expire(now: t, self)
        }
        func setRadio(advertising: Bool, scanning: Bool, initiating: Bool) {
            isAdvertising = advertising; isScanning = scanning; isInitiating = initiating
        }
        func setBonds(_ b: [Bond]) { bonds = b; privacy.bondsChanged(self) }
        func setInfo(_ i: ControllerInfo) { info = i }
        func identity(of address: DeviceAddress) -> DeviceAddress? { privacy.identity(of: address, self) }
        func prepare() async { await privacy.prepareRadio(self) }
        func clearCommands() { record.commands = [] }
    }

    let irk = [UInt8](repeating: 0x3C, count: 16)
    let peerIdentity = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_91), type: .public)

    var bond: Bond {
        var b = Bond(peer: peerIdentity, peerLongTermKey: [UInt8](repeating: 1, count: 16), secureConnections: true, authenticated: false, keySize: 16)
        b.peerIdentityResolvingKey = irk
        return b
    }

    /// Privacy on: an RPA of our IRK is set at once; when its lifetime ends it is renewed, with
    /// advertising and the scan paused around LE Set Random Address and resumed after.
    func testOurRPAIsSetAndRenewedWithTheRadioPausedAroundIt() async throws {
        let d = Driver()
        try await d.startPrivacy(rotation: .seconds(60))
        let first = try await XCTUnwrapAsync(await d.ownRandomAddress)
        XCTAssertTrue(ResolvablePrivateAddress.resolves(first, irk: [UInt8](repeating: 0x5A, count: 16)))
        await d.setRadio(advertising: true, scanning: true, initiating: false)
        await d.clearCommands()
        await d.advance(to: .seconds(61))
        await d.runSpawned()
        let second = try await XCTUnwrapAsync(await d.ownRandomAddress)
        XCTAssertNotEqual(first, second)
        let opcodes = await d.opcodes, radio = await d.radio
        XCTAssertEqual(opcodes, [.leSetRandomAddress])
        XCTAssertEqual(radio, ["advertising paused", "scan paused", "scan resumed", "advertising resumed"])
    }

    /// A connection attempt is not cut short for a new RPA: the renewal waits, and the next
    /// radio start (`prepareRadio`) makes it.
    func testARenewalDueDuringAConnectionAttemptWaitsForTheNextRadioStart() async throws {
        let d = Driver()
        try await d.startPrivacy(rotation: .seconds(60))
        let first = await d.ownRandomAddress
        await d.setRadio(advertising: false, scanning: false, initiating: true)
        await d.advance(to: .seconds(61))
        await d.runSpawned()
        var now = await d.ownRandomAddress
        XCTAssertEqual(now, first, "renewed during a connection attempt")
        await d.setRadio(advertising: false, scanning: false, initiating: false)
        await d.prepare()
        now = await d.ownRandomAddress
        XCTAssertNotEqual(now, first)
    }

    /// A peer's RPA made with a bond's IRK resolves to the bond's identity; one made with
    /// another IRK, and any address once the bond is gone, to nobody.
    func testAPeersRPAResolvesToItsBondsIdentityWhileTheBondLasts() async throws {
        let d = Driver()
        await d.setBonds([bond])
        let rpa = DeviceAddress(try ResolvablePrivateAddress.generate(irk: irk, random: [1, 2, 3]), type: .random)
        let stranger = DeviceAddress(try ResolvablePrivateAddress.generate(irk: [UInt8](repeating: 9, count: 16), random: [1, 2, 3]), type: .random)
        var resolved = await d.identity(of: rpa)
        XCTAssertEqual(resolved, peerIdentity)
        resolved = await d.identity(of: stranger)
        XCTAssertNil(resolved)
        await d.setBonds([])
        resolved = await d.identity(of: rpa)
        XCTAssertNil(resolved, "a removed bond's RPA still resolved (a cached resolution)")
    }

    /// With a controller that has LL Privacy and the commands, the resolving list is loaded
    /// with the bonded IRK in device privacy mode before the radio starts, and resolution is
    /// switched on; a controller without LL Privacy is never sent the list.
    func testTheResolvingListIsLoadedBeforeTheRadioStartsOnlyWhereTheControllerHasOne() async throws {
        let d = Driver()
        var info = ControllerInfo(address: BDAddress(rawValue: 1), version: nil,
                                  supportedCommands: LocalSupportedCommands(octets: [UInt8](repeating: 0xFF, count: 64)),
                                  features: nil, leFeatures: LESupportedFeatures(rawValue: 0), aclBufferLength: 27, aclBufferCount: 4)
        await d.setInfo(info)
        await d.setBonds([bond])
        await d.runSpawned()
        await d.prepare()
        var opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [], "a controller without LL Privacy got resolving list commands")

        let e = Driver()
        info.leFeatures = .llPrivacy
        await e.setInfo(info)
        await e.setBonds([bond])
        await e.runSpawned()
        await e.prepare()
        opcodes = await e.opcodes
        XCTAssertEqual(opcodes, [.leSetAddressResolutionEnable, .leClearResolvingList,
                                 .leAddDeviceToResolvingList, .leSetPrivacyMode, .leSetAddressResolutionEnable])
        let resolved = await e.identity(of: DeviceAddress(peerIdentity.address, type: .publicIdentity))
        XCTAssertEqual(resolved, peerIdentity, "an identity the controller resolved is the bond's")

        // LL Privacy and the list, but no LE Set Privacy Mode (a 4.2 controller): every entry
        // would stay in network privacy mode and hide a bonded peer advertising with its
        // identity (Vol 6 Part B §4.7), so the host resolves and leaves the list alone.
        let f = Driver()
        var octets = [UInt8](repeating: 0xFF, count: 64)
        octets[39] &= ~(1 << 2)
        info.supportedCommands = LocalSupportedCommands(octets: octets)
        await f.setInfo(info)
        await f.setBonds([bond])
        await f.runSpawned()
        await f.prepare()
        opcodes = await f.opcodes
        XCTAssertEqual(opcodes, [], "a controller without LE Set Privacy Mode got resolving list commands")
    }
}
