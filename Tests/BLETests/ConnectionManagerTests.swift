@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `ConnectionManager` on its own, driven by a `ConnectionDriver` double instead of a host: the
/// link table as the controller reports links, what it tells the driver to route, a connect
/// attempt, and the answer to a peer's connection parameter request.
final class ConnectionManagerTests: XCTestCase {
    actor Driver: ConnectionDriver, RecordingDriver {
        let connections = ConnectionManager(configuration: HostConfiguration())
        nonisolated let clock: any BLEClock = SystemClock()
        var now: Duration = .zero
        var record = DriverRecord()
        var ownAddressType: OwnAddressType = .public
        let ownDeviceAddress: DeviceAddress? = DeviceAddress(BDAddress(rawValue: 0xC0_FF_EE_00_00_01), type: .public)
        /// What the manager asked the driver to route, in order.
        var routed: [String] = []
        var background: [HCIOpcode] = []
        var radioPreparations = 0
        private var commandWaiters: [(HCIOpcode, CheckedContinuation<Void, Never>)] = []

        func command(_ command: HCICommand, timeout: Duration?) async throws -> CommandResult {
            _ = try record.answer(command)
            let ready = commandWaiters.filter { $0.0 == command.opcode }
            commandWaiters.removeAll { $0.0 == command.opcode }
            ready.forEach { $0.1.resume() }
            return .status
        }
        func sendInBackground(_ command: HCICommand, _ name: String) { background.append(command.opcode) }
        func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int { 0 }
        func prepareRadioForConnecting() async { radioPreparations += 1; ownAddressType = .random }
        func linkOpened(_ link: Link) { routed.append("opened 0x\(String(link.handle, radix: 16)) \(link.role)") }
        func linkEnded(_ link: Link, reason: HCIStatus, error: BLEError) { routed.append("ended 0x\(String(link.handle, radix: 16)) \(reason)") }
        func linkTimersExpired(handle: UInt16, client: ATTBearerSetActions, server: [ServerAction], now: Duration) {}
        func channelEvent(_ event: CreditBasedChannelEvent, handle: UInt16) {}

        /// Waits until the manager has sent a command with `opcode` (or returns if it has).
        func waitForCommand(_ opcode: HCIOpcode) async {
            if record.opcodes.contains(opcode) { return }
            await withCheckedContinuation { commandWaiters.append((opcode, $0)) }
        }
        func deliver(_ meta: LEMetaEvent) { connections.handle(meta, self) }
        func deliver(_ event: HCIEvent) { connections.handle(event, self) }
        func connect(_ peer: DeviceAddress) async throws -> LinkHandle {
            try await connections.connect(to: peer, timeout: .seconds(5), ownAddressType: .public, self)
        }
        var handles: [UInt16] { connections.links.handles }
        var lastCreateConnection: HCICommand? { record.commands.last { $0.opcode == .leCreateConnection } }
    }

    let peer = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_E7), type: .public)

    func complete(handle: UInt16, role: LERole) -> LEMetaEvent {
        .connectionComplete(LEConnectionComplete(status: .success, handle: handle, role: role, peer: peer, interval: 24, latency: 0,
                                                 supervisionTimeout: 400, centralClockAccuracy: 0, format: .legacy))
    }

    /// A central connecting to us: the link enters the table and the driver routes its opening;
    /// its Disconnection Complete takes it out and the driver routes its end, with the reason.
    func testAPeripheralRoleLinkIsOpenedAndEndedThroughTheDriver() async throws {
        let d = Driver()
        await d.deliver(complete(handle: 0x41, role: .peripheral))
        var handles = await d.handles
        XCTAssertEqual(handles, [0x41])
        await d.deliver(.disconnectionComplete(status: .success, handle: 0x41, reason: .remoteUserTerminatedConnection))
        handles = await d.handles
        XCTAssertEqual(handles, [])
        let routed = await d.routed
        XCTAssertEqual(routed, ["opened 0x41 peripheral", "ended 0x41 \(HCIStatus.remoteUserTerminatedConnection)"])
    }

    /// A connect: the radio is made ready first, LE Create Connection goes out with the own
    /// address type the preparation left, and the attempt ends with the link the controller
    /// then reports.
    func testAConnectPreparesTheRadioThenEndsWithTheReportedLink() async throws {
        let d = Driver()
        let p = peer
        let attempt = Task { try await d.connect(p) }
        await d.waitForCommand(.leCreateConnection)
        let prepared = await d.radioPreparations
        XCTAssertEqual(prepared, 1)
        let create = try await XCTUnwrapAsync(await d.lastCreateConnection)
        // Own_Address_Type follows the peer's type and address in the parameters (§7.8.12).
        XCTAssertEqual(create.parameters[12], OwnAddressType.random.rawValue)
        await d.deliver(complete(handle: 0x40, role: .central))
        let link = try await attempt.value
        XCTAssertEqual(link.handle, 0x40)
        XCTAssertEqual(link.peer, peer)
    }

    /// A peer's connection parameter request within the spec's ranges is accepted; one outside
    /// them refused (Vol 4 Part E §7.7.65.6).
    func testAPeersParameterRequestIsAnsweredByWhetherItIsValid() async throws {
        let d = Driver()
        await d.deliver(complete(handle: 0x42, role: .central))
        await d.deliver(.remoteConnectionParameterRequest(handle: 0x42, intervalMin: 24, intervalMax: 40, maxLatency: 0, timeout: 400))
        await d.deliver(.remoteConnectionParameterRequest(handle: 0x42, intervalMin: 2, intervalMax: 1, maxLatency: 0, timeout: 1))
        let answers = await d.background
        XCTAssertEqual(answers, [.leRemoteConnectionParameterRequestReply, .leRemoteConnectionParameterRequestNegativeReply])
    }
}
