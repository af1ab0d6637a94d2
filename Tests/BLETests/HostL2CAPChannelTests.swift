@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import Synchronization
import XCTest
import BLETestSupport

/// LE credit-based channels of one host against a scripted peer (Core spec Vol 3 Part A §4.22,
/// §4.23, §10.2): what the peer sends right after its response reaches the channel.
final class HostL2CAPChannelTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)

    /// A peer may send on a channel as soon as its success response is out, and may close it
    /// as soon: the K-frame and the Disconnection Request that follow the response reach the
    /// channel even when the task that opened it has not run yet (it waits at low priority).
    func testWhatFollowsTheResponseAtOnceIsNotLost() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let p = try await central.connect(peer, timeout: .seconds(5))
        let opener = Task(priority: .background) { try await p.openL2CAPChannel(psm: 0x80) }
        try await t.controller.waitForL2CAP(channel: 0x0005, within: .seconds(10)) { !$0.isEmpty }
        let request = try LESignalingCommand(pdu: await t.controller.l2capPayloads(channel: 0x0005)[0])
        guard case let .leCreditBasedConnectionRequest(id, q) = request else { return XCTFail("\(request)") }
        let response = LESignalingCommand.leCreditBasedConnectionResponse(identifier: id, .init(
            destinationCID: 0x0041, mtu: 100, mps: 23, initialCredits: 1, result: .success))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0005, payload: response.encode())
        await t.controller.sendL2CAP(handle: 0x0040, channel: q.sourceCID, payload: [2, 0, 0xCA, 0xFE])
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0005, payload: LESignalingCommand.disconnectionRequest(
            identifier: 9, destinationCID: q.sourceCID, sourceCID: 0x0041).encode())
        let channel = try await opener.value
        let got = SharedValue<[[UInt8]]?>(nil)
        let reader = Task {
            var sdus: [[UInt8]] = []
            for try await sdu in channel { sdus.append(sdu) }
            got.withLock { $0 = sdus }
        }
        let ended = await got.wait("the channel's end", within: .seconds(10)) { $0 != nil }
        if !ended { reader.cancel() }
        XCTAssertEqual(got.withLock { $0 }, [[0xCA, 0xFE]], "the SDU, then the clean close")
        await central.close()
    }
}
