@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `GATTClientSessions` on its own, driven by a `GATTClientDriver` double instead of a host: a
/// procedure's request and answer, and a Service Changed indication handed on to the attribute
/// caches through the driver.
final class GATTClientSessionsTests: XCTestCase {
    actor Driver: GATTClientDriver, LinkTableDouble, RecordingDriver {
        let client = GATTClientSessions()
        nonisolated let clock: any BLEClock = SystemClock()
        var record = DriverRecord()
        var links = LinkTable()
        let aclFlow = ACLFlowController(bufferCount: 4, bufferLength: 27)
        var tokens: UInt64 = 0
        /// ATT PDUs sent on the unenhanced bearer (as L2CAP payloads on channel 4).
        var sent: [[UInt8]] = []
        /// What the client asked the driver to route, in order.
        var routed: [String] = []
        private var sendWaiters: [CheckedContinuation<Void, Never>] = []

        func makeToken() -> UInt64 { tokens += 1; return tokens }
        func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int {
            sent.append(payload)
            let w = sendWaiters
            sendWaiters = []
            w.forEach { $0.resume() }
            return 0
        }
        func sendATT(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) -> Bool { _ = sendL2CAP(handle: handle, channel: 4, payload: pdu); return true }
        func openATTBearers(linkID: UInt64, count: Int) async throws -> [ATTBearerID] { [] }
        func closeEnhancedATTBearer(linkID: UInt64, _ bearer: ATTBearerID) {}
        func disconnectInBackground(handle: UInt16, _ why: String) { routed.append("disconnect") }
        func serverReceives(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) { routed.append("server \(pdu)") }
        func serverFeaturesRead(_ features: [UInt8], linkID: UInt64) {}
        func cachedServerFeatures(linkID: UInt64) -> [UInt8]? { nil }
        func servicesChanged(_ range: ClosedRange<UInt16>, linkID: UInt64) { routed.append("changed \(range)") }
        func databaseOutOfSync(linkID: UInt64) { routed.append("out of sync") }
        func bond(for peer: DeviceAddress) -> Bond? { nil }
        func takeLocalSignCounter(towards peer: DeviceAddress) throws(BLEError) -> (key: [UInt8], counter: UInt32) {
            throw .security(.unavailable("no bond"))
        }

        func connect(handle: UInt16) {
            let parameters = LinkParameters(interval: 24, latency: 0, supervisionTimeout: 400)
            links[handle] = Link(id: UInt64(handle), handle: handle, peer: DeviceAddress(BDAddress(rawValue: 0xB0), type: .public),
                                 role: .central, parameters: parameters,
                                 clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30))),
                                 server: ATTServer(), observation: LinkObservation(parameters: parameters))
        }
        func waitForSent(_ n: Int) async {
            while sent.count < n { await withCheckedContinuation { sendWaiters.append($0) } }
        }
        func receive(_ pdu: [UInt8], handle: UInt16) { client.receive(pdu[...], handle: handle, self) }
        func read(_ attribute: UInt16, linkID: UInt64) async throws -> GATTOutput {
            try await client.perform(AnyGATTProcedure(ReadProcedure(handle: attribute)), onLink: linkID, self)
        }
        func noteServiceChanged(_ valueHandle: UInt16, linkID: UInt64) -> Bool {
            client.noteServiceChangedHandle(valueHandle, onLink: linkID, self)
        }
    }

    /// A read sends its Read Request on the link and ends with the value of the Read Response.
    func testAReadSendsItsRequestAndEndsWithTheResponse() async throws {
        let d = Driver()
        await d.connect(handle: 0x40)
        let reading = Task { try await d.read(0x0003, linkID: 0x40) }
        await d.waitForSent(1)
        let sent = await d.sent
        XCTAssertEqual(sent, [[0x0A, 0x03, 0x00]])
        await d.receive([0x0B, 0xCA, 0xFE], handle: 0x40)
        let output = try await reading.value
        XCTAssertEqual(output, .value([0xCA, 0xFE]))
    }

    /// A Service Changed indication (on the handle noted as the server's) is confirmed and its
    /// range goes to the driver (the attribute caches); a request arriving on the bearer goes to
    /// the server.
    func testAServiceChangedIndicationIsConfirmedAndRoutedAndRequestsGoToTheServer() async throws {
        let d = Driver()
        await d.connect(handle: 0x40)
        let noted = await d.noteServiceChanged(0x0010, linkID: 0x40)
        XCTAssertTrue(noted)
        await d.receive([0x1D, 0x10, 0x00, 0x20, 0x00, 0x30, 0x00], handle: 0x40)
        await d.receive([0x0A, 0x01, 0x00], handle: 0x40)
        let routed = await d.routed, sent = await d.sent
        XCTAssertEqual(routed, ["changed 32...48", "server [10, 1, 0]"])
        XCTAssertEqual(sent, [[0x1E]], "the indication confirmed")
    }
}
