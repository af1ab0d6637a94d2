@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// A host under test behind the fake controller, bonded with one peer (a Secure Connections bond
/// with `ltk` both ways), and what the peer's controller does on the link: the fixture of the
/// tests of raising a link's security and of Security Requests.
struct BondedLinkFixture: Sendable {
    /// Our peripheral's static random address (unused by the central's tests).
    var own = BDAddress(rawValue: 0xC1_02_03_04_05_06)
    let peer: DeviceAddress
    let ltk: [UInt8]
    /// The link's handle as a peripheral (the fake controller numbers a central's from 0x0040).
    var handle: UInt16 = 0x0041

    /// The bond with `peer`: `ltk` both ways.
    func bond(authenticated: Bool = false, secureConnections: Bool = true, keySize: Int = 16) -> Bond {
        Bond(peer: peer, peerLongTermKey: ltk, localLongTermKey: ltk,
             secureConnections: secureConnections, authenticated: authenticated, keySize: keySize)
    }

    /// A store holding only `bond(...)`.
    func store(authenticated: Bool = false, secureConnections: Bool = true, keySize: Int = 16) throws -> InMemoryBondStore {
        let store = InMemoryBondStore()
        try store.save(bond(authenticated: authenticated, secureConnections: secureConnections, keySize: keySize))
        return store
    }

    /// Our peripheral (display only, so a raise may ask for MITM), connected to the bonded central.
    func peripheral(_ t: HostUnderTest, authenticated: Bool = false, secureConnections: Bool = true,
                    keySize: Int = 16) async throws -> PeripheralManager {
        let m = try await openPeripheral(t, store: store(authenticated: authenticated, secureConnections: secureConnections, keySize: keySize))
        await connectCentral(t, to: m)
        return m
    }

    /// Our peripheral (display only) over `store`, not yet connected: for a test that sets it up
    /// further (a service) before `connectCentral`; `configure` changes the rest of its
    /// configuration.
    func openPeripheral(_ t: HostUnderTest, store: any BondStore,
                        configure: (inout HostConfiguration) -> Void = { _ in }) async throws -> PeripheralManager {
        try await t.openPeripheral(own: own, store: store) { config in
            config.security.pairing.ioCapability = .displayOnly
            configure(&config)
        }
    }

    /// The bonded central connects to our peripheral `m` (on `handle`).
    func connectCentral(_ t: HostUnderTest, to m: PeripheralManager) async {
        await t.centralConnects(from: peer, handle: handle)
        _ = await m.waitForConnectedCentrals(1)
    }

    /// The central encrypts (or refreshes the encryption) with the bond's key: the `replies`th
    /// LTK Request Reply is waited for before the change.
    func encryptWithTheBondKey(_ t: HostUnderTest, replies: Int = 1) async throws {
        try await requestTheBondKey(t, replies: replies)
        await t.controller.sendNow(.encryptionChange(status: .success, handle: handle, enabled: true))
    }

    /// The first half of `encryptWithTheBondKey`: the central's LTK Request, and our host's
    /// `replies`th LTK Request Reply; the Encryption Change is the test's to send.
    func requestTheBondKey(_ t: HostUnderTest, replies: Int = 1) async throws {
        await t.controller.sendNow(.le(.longTermKeyRequest(handle: handle, randomNumber: 0, encryptedDiversifier: 0)))
        try await t.controller.waitForCommand(.leLongTermKeyRequestReply, count: replies)
    }

    /// The Security Requests our peripheral sent.
    func securityRequests(_ t: HostUnderTest) async -> [[UInt8]] {
        await t.controller.l2capPayloads(channel: 0x0006).filter { $0.first == 0x0B }
    }

    /// The `n`th Security Request, once sent.
    func waitForSecurityRequest(_ t: HostUnderTest, _ n: Int) async throws -> [UInt8] {
        try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { $0.filter { $0.first == 0x0B }.count >= n }
        return await securityRequests(t)[n - 1]
    }

    /// The LE Credit Based Connection Requests our host sent.
    func connectionRequests(_ t: HostUnderTest) async -> [[UInt8]] {
        await t.controller.l2capPayloads(channel: 0x0005).filter { $0.first == 0x14 }
    }

    /// Answers the `number`th LE Credit Based Connection Request with `result`.
    func refuseConnection(_ t: HostUnderTest, number: Int, _ result: LESignalingCommand.CreditBasedConnectionResult) async throws {
        let isRequest: @Sendable ([UInt8]) -> Bool = { $0.first == 0x14 }
        try await t.controller.waitForL2CAP(channel: 0x0005, within: .seconds(10)) { $0.filter(isRequest).count >= number }
        let pdu = await t.controller.l2capPayloads(channel: 0x0005).filter(isRequest)[number - 1]
        guard case let .leCreditBasedConnectionRequest(id, _) = try LESignalingCommand(pdu: pdu) else { return XCTFail("\(pdu)") }
        let response = LESignalingCommand.leCreditBasedConnectionResponse(identifier: id, .init(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: result))
        await t.controller.sendL2CAP(handle: handle, channel: 0x0005, payload: response.encode())
    }

    /// Our central, bonded with the peripheral `peer` by an unauthenticated key, connected (handle
    /// 0x0040) and encrypted with the bond's key.
    func encryptedCentral(_ t: HostUnderTest, io: SMPIOCapability) async throws -> (Central, Peripheral) {
        let (central, p) = try await connectedCentral(t, io: io)
        let encrypting = Task { try await p.encrypt() }
        _ = try await t.controller.waitForCommand(.leEnableEncryption, within: .seconds(5))
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0040, enabled: true))
        try await encrypting.value
        return (central, p)
    }

    /// Our central, bonded with the peripheral `peer` by an unauthenticated key and connected
    /// (handle 0x0040), not encrypted; `io` nil keeps the configuration's IO capability.
    func connectedCentral(_ t: HostUnderTest, io: SMPIOCapability? = nil) async throws -> (Central, Peripheral) {
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = try store()
        if let io { config.security.pairing.ioCapability = io }
        let central = try await Central.open(transport: t.hostEnd, configuration: config)
        let p = try await central.connect(peer, timeout: .seconds(5))
        return (central, p)
    }
}
