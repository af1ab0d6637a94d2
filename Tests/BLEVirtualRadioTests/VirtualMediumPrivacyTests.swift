import BLEHCI
import BLEHost
import BLEVirtualRadio
import BLEWire
import XCTest

/// The virtual controller's link-layer privacy in plain values (Core spec Vol 6 Part B §6, Vol 4
/// Part E §7.8.38–§7.8.44, §7.8.77): an advertiser on a resolvable private address, a scanner
/// and initiator with it on its resolving list.
final class VirtualMediumPrivacyTests: XCTestCase {
    var medium = VirtualMedium()
    var a = VirtualMedium.ControllerID(rawValue: 0) // the advertiser, with privacy
    var b = VirtualMedium.ControllerID(rawValue: 0) // the scanner / central
    let identity = DeviceAddress(BDAddress(rawValue: 0x00_00_00_00_00_AA), type: .public)
    let irk: [UInt8] = (1...16).map { UInt8($0) }
    var rpa = BDAddress.zero
    /// Where the medium's time stands: each scan runs for the next 150 ms.
    var now = Duration.zero

    override func setUp() {
        medium = VirtualMedium()
        a = medium.add(VirtualController(address: identity.address))
        b = medium.add(VirtualController(address: BDAddress(rawValue: 0xBB)))
        for id in [a, b] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
        rpa = (try? ResolvablePrivateAddress.generate(irk: irk, random: [0x12, 0x34, 0x56])) ?? .zero
    }

    func events(_ d: [VirtualMedium.Delivery], to id: VirtualMedium.ControllerID) -> [HCIEvent] {
        d.compactMap { x in
            guard x.to == id, case let .event(e) = x.packet else { return nil }
            return e
        }
    }

    func status(_ d: [VirtualMedium.Delivery], _ op: HCIOpcode) -> UInt8? {
        for e in events(d, to: b) {
            if case let .commandComplete(_, opcode, params) = e, opcode == op { return params.first }
        }
        return nil
    }

    func advertise(ownAddressType: OwnAddressType) {
        if ownAddressType == .random { _ = medium.receive(.leSetRandomAddress(rpa), from: a, now: .zero) }
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160, ownAddressType: ownAddressType), from: a, now: .zero)
        _ = medium.receive(.leSetAdvertisingData([2, 1, 6]), from: a, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: a, now: .zero)
    }

    func listAdvertiser(devicePrivacy: Bool) {
        XCTAssertEqual(status(medium.receive(.leAddDeviceToResolvingList(peer: identity, peerIRK: irk, localIRK: [UInt8](repeating: 0, count: 16)), from: b, now: .zero),
                              .leAddDeviceToResolvingList), 0)
        if devicePrivacy {
            XCTAssertEqual(status(medium.receive(.leSetPrivacyMode(peer: identity, device: true), from: b, now: .zero), .leSetPrivacyMode), 0)
        }
        XCTAssertEqual(status(medium.receive(.leSetAddressResolutionEnable(true), from: b, now: .zero), .leSetAddressResolutionEnable), 0)
    }

    func scanReports() -> [LEAdvertisingReport] {
        _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: b, now: now)
        now += .milliseconds(150)
        let d = medium.advance(to: now)
        _ = medium.receive(.leSetScanEnable(enable: false, filterDuplicates: false), from: b, now: now)
        return events(d, to: b).flatMap { e -> [LEAdvertisingReport] in
            if case let .le(.advertisingReport(r)) = e { return r }
            return []
        }
    }

    func testAResolvedRPAIsReportedAsTheIdentityAndAnUnresolvedOneAsItIs() {
        advertise(ownAddressType: .random)
        XCTAssertEqual(scanReports().first?.address, DeviceAddress(rpa, type: .random), "no resolving list: the RPA as heard")
        listAdvertiser(devicePrivacy: false)
        XCTAssertEqual(scanReports().first?.address, DeviceAddress(identity.address, type: .publicIdentity))
    }

    func testNetworkPrivacyModeIgnoresTheIdentityOnTheAirAndDeviceModeAcceptsIt() {
        advertise(ownAddressType: .public)
        listAdvertiser(devicePrivacy: false)
        XCTAssertEqual(scanReports(), [], "network privacy: a listed peer's identity address is not accepted")
        _ = medium.receive(.leSetAddressResolutionEnable(false), from: b, now: now)
        XCTAssertEqual(status(medium.receive(.leSetPrivacyMode(peer: identity, device: true), from: b, now: now), .leSetPrivacyMode), 0)
        _ = medium.receive(.leSetAddressResolutionEnable(true), from: b, now: now)
        XCTAssertEqual(scanReports().first?.address, identity, "device privacy: the identity is heard as it is")
    }

    func testConnectingToAnIdentityReachesItsRPAAndReportsBoth() throws {
        advertise(ownAddressType: .random)
        listAdvertiser(devicePrivacy: true)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(identity.address, type: .publicIdentity),
                                               connectionIntervalMin: 6, connectionIntervalMax: 6, maxLatency: 0, supervisionTimeout: 100), from: b, now: .zero)
        let d = medium.advance(to: .milliseconds(100))
        guard case let .le(.connectionComplete(c))? = events(d, to: b).first(where: { if case .le(.connectionComplete) = $0 { return true }; return false }) else {
            return XCTFail("no connection: \(d)")
        }
        XCTAssertEqual(c.status, .success)
        XCTAssertEqual(c.peer, DeviceAddress(identity.address, type: .publicIdentity))
        XCTAssertEqual(c.peerResolvablePrivateAddress, rpa)
        XCTAssertEqual(c.format, .enhanced)
    }

    func testAnIdentityTypeDoesNotReachAnUnlistedDevice() {
        advertise(ownAddressType: .random)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(identity.address, type: .publicIdentity),
                                               connectionIntervalMin: 6, connectionIntervalMax: 6, maxLatency: 0, supervisionTimeout: 100), from: b, now: .zero)
        let d = medium.advance(to: .seconds(1))
        XCTAssertFalse(events(d, to: b).contains { if case .le(.connectionComplete) = $0 { return true }; return false })
    }

    func testTheListIsGuardedWhileResolutionIsInUseAndIsBounded() {
        listAdvertiser(devicePrivacy: false)
        XCTAssertEqual(status(medium.receive(.leAddDeviceToResolvingList(peer: identity, peerIRK: irk, localIRK: irk), from: b, now: .zero),
                              .leAddDeviceToResolvingList), 0x12, "an identity already listed")
        _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: b, now: .zero)
        XCTAssertEqual(status(medium.receive(.leClearResolvingList, from: b, now: .zero), .leClearResolvingList), 0x0C, "not while scanning with resolution on")
        XCTAssertEqual(status(medium.receive(.leSetAddressResolutionEnable(false), from: b, now: .zero), .leSetAddressResolutionEnable), 0x0C)
        _ = medium.receive(.leSetScanEnable(enable: false, filterDuplicates: false), from: b, now: .zero)
        XCTAssertEqual(status(medium.receive(.leClearResolvingList, from: b, now: .zero), .leClearResolvingList), 0)
        XCTAssertEqual(status(medium.receive(.leReadResolvingListSize, from: b, now: .zero), .leReadResolvingListSize), 0)
        for i in 0..<8 {
            let peer = DeviceAddress(BDAddress(rawValue: 0x100 + UInt64(i)), type: .public)
            XCTAssertEqual(status(medium.receive(.leAddDeviceToResolvingList(peer: peer, peerIRK: irk, localIRK: irk), from: b, now: .zero), .leAddDeviceToResolvingList), 0)
        }
        XCTAssertEqual(status(medium.receive(.leAddDeviceToResolvingList(peer: identity, peerIRK: irk, localIRK: irk), from: b, now: .zero), .leAddDeviceToResolvingList),
                       0x07, "Memory Capacity Exceeded past the list's size")
        XCTAssertEqual(status(medium.receive(.leRemoveDeviceFromResolvingList(peer: identity), from: b, now: .zero), .leRemoveDeviceFromResolvingList), 0x02)
    }
}
