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
        var usesExtendedCommands = false
        var supportedPHYs: LEPHYSet = [.le1M, .le2M, .leCoded]
        var info: ControllerInfo?
        /// Connection Parameter Update Requests sent over L2CAP, by handle.
        var l2capParameterRequests: [UInt16] = []
        func requestParametersOverL2CAP(handle: UInt16, _ parameters: LESignalingCommand.ConnectionParameters) -> Bool {
            l2capParameterRequests.append(handle)
            return true
        }
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
        func connect(_ peer: DeviceAddress, phys: LEPHYSet = .le1M) async throws -> LinkHandle {
            try await connections.connect(to: peer, timeout: .seconds(5), phys: phys, ownAddressType: .public, self)
        }
        func useExtendedCommands() { usesExtendedCommands = true }
        func support(_ phys: LEPHYSet) { supportedPHYs = phys }
        /// When set, LE Read PHY's answer (LE 1M) comes after a PHY Update Complete to this PHY.
        var phyUpdateBeforeReadPHYAnswer: LEPHY?
        func updatePHYBeforeReadPHYAnswer(_ phy: LEPHY) { phyUpdateBeforeReadPHYAnswer = phy }
        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            let answer = try record.answer(cmd)
            guard cmd.opcode == .leReadPHY else { return answer }
            let handle = UInt16(cmd.parameters[0]) | UInt16(cmd.parameters[1]) << 8
            if let phy = phyUpdateBeforeReadPHYAnswer {
                connections.handle(.phyUpdateComplete(status: .success, handle: handle, txPHY: phy, rxPHY: phy), self)
            }
            return [0, cmd.parameters[0], cmd.parameters[1], LEPHY.le1M.rawValue, LEPHY.le1M.rawValue]
        }
        func linkPHY(_ handle: UInt16) -> LEPHY? { connections.links[handle]?.txPHY }
        func clearCommands() { record.commands = [] }
        var handles: [UInt16] { connections.links.handles }
        func channelSelectionAlgorithm(_ handle: UInt16) -> Int? { connections.links[handle]?.observation.snapshot.channelSelectionAlgorithm }
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

    /// With the extended commands a connect is LE Extended Create Connection (Vol 4 Part E
    /// §7.8.66), never the legacy command (§3.1.1): on LE 1M it gives parameters for LE 1M and
    /// LE 2M (a link may start on the advertiser's secondary PHY); on LE Coded for that alone.
    func testWithTheExtendedCommandsAConnectIsAnExtendedCreateConnection() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        let p = peer
        for (phys, bits, entries) in [(LEPHYSet.le1M, UInt8(0x03), 2), (LEPHYSet.leCoded, 0x04, 1), ([.le1M, .leCoded], 0x07, 3)] {
            await d.clearCommands()
            let attempt = Task { try await d.connect(p, phys: phys) }
            try await waitUntilSent(.leExtendedCreateConnection, d)
            let opcodes = await d.opcodes
            XCTAssertEqual(opcodes, [.leExtendedCreateConnection], "no legacy LE Create Connection")
            let create = try await XCTUnwrapAsync(await d.record.commands.last)
            // Filter policy, own address type, peer address type and address, then Initiating_PHYs.
            XCTAssertEqual(create.parameters[1], OwnAddressType.random.rawValue)
            XCTAssertEqual(Array(create.parameters[3..<9]), peer.address.littleEndianBytes)
            XCTAssertEqual(create.parameters[9], bits)
            XCTAssertEqual(create.parameters.count, 10 + 16 * entries, "one 16-octet entry per initiating PHY")
            // The first entry's connection interval minimum is the configuration's (30 ms).
            XCTAssertEqual(UInt16(create.parameters[14]) | UInt16(create.parameters[15]) << 8, HostConfiguration().connectionIntervalMin)
            await d.deliver(complete(handle: 0x40, role: .central))
            _ = try await attempt.value
            await d.deliver(.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminatedConnection))
        }
    }

    /// On the legacy commands the coded PHY cannot be initiated on: the connect fails with
    /// `unsupported` before any command; LE 2M is never a PHY to initiate on.
    func testTheCodedPHYNeedsTheExtendedCommandsAndLE2MIsNoInitiatingPHY() async throws {
        let d = Driver()
        let p = peer
        do {
            _ = try await d.connect(p, phys: .leCoded)
            XCTFail("connected on LE Coded with the legacy commands")
        } catch BLEError.unsupported {}
        await d.useExtendedCommands()
        do {
            _ = try await d.connect(p, phys: .le2M)
            XCTFail("initiated on LE 2M")
        } catch BLEError.invalidArgument {}
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [])
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

    /// On a controller whose LE features list neither LE 2M nor LE Coded: a connect on LE 1M
    /// gives the one entry it may (an LE 2M entry would be refused, §7.8.66), and one on LE
    /// Coded is refused with `unsupported` before any command.
    func testAConnectGivesOnlyThePHYsTheControllerHas() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        await d.support(.le1M)
        let p = peer
        do {
            _ = try await d.connect(p, phys: .leCoded)
            XCTFail("initiated on LE Coded without it")
        } catch BLEError.unsupported {}
        var opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [])
        let attempt = Task { try await d.connect(p) }
        try await waitUntilSent(.leExtendedCreateConnection, d)
        let create = try await XCTUnwrapAsync(await d.record.commands.last)
        XCTAssertEqual(create.parameters[9], LEPHYSet.le1M.rawValue)
        XCTAssertEqual(create.parameters.count, 10 + 16)
        await d.deliver(complete(handle: 0x40, role: .central))
        _ = try await attempt.value
        opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leExtendedCreateConnection])
    }

    /// LE Channel Selection Algorithm (Vol 4 Part E §7.7.65.20): 0x00 is algorithm #1, 0x01
    /// #2, shown to the application; a reserved value, or one for a handle with no link, is
    /// ignored.
    func testTheChannelSelectionAlgorithmEventReachesTheLink() async throws {
        let d = Driver()
        await d.deliver(complete(handle: 0x41, role: .peripheral))
        var csa = await d.channelSelectionAlgorithm(0x41)
        XCTAssertNil(csa)
        await d.deliver(.channelSelectionAlgorithm(handle: 0x41, algorithm: 0x05))
        csa = await d.channelSelectionAlgorithm(0x41)
        XCTAssertNil(csa, "a reserved value")
        await d.deliver(.channelSelectionAlgorithm(handle: 0x42, algorithm: 0x01))
        await d.deliver(.channelSelectionAlgorithm(handle: 0x41, algorithm: 0x01))
        csa = await d.channelSelectionAlgorithm(0x41)
        XCTAssertEqual(csa, 2)
        await d.deliver(.channelSelectionAlgorithm(handle: 0x41, algorithm: 0x00))
        csa = await d.channelSelectionAlgorithm(0x41)
        XCTAssertEqual(csa, 1)
    }

    /// A link made with the extended commands has its PHY read (LE Read PHY), unless the
    /// controller has LE 1M alone; a PHY Update Complete that comes before the read's answer
    /// wins over it (the answer is the older).
    func testThePHYReadOfANewLinkNeverOverwritesANewerUpdate() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        await d.updatePHYBeforeReadPHYAnswer(.le2M)
        // A central connected to us (a central-role link nobody asked for would be disconnected).
        await d.deliver(complete(handle: 0x40, role: .peripheral))
        await d.runSpawned()
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leReadPHY])
        let phy = await d.linkPHY(0x40)
        XCTAssertEqual(phy, .le2M, "the read's older answer overwrote the update")

        let onlyOneM = Driver()
        await onlyOneM.useExtendedCommands()
        await onlyOneM.support(.le1M)
        await onlyOneM.deliver(complete(handle: 0x40, role: .peripheral))
        await onlyOneM.runSpawned()
        let none = await onlyOneM.opcodes
        XCTAssertEqual(none, [], "LE Read PHY asked of a controller with LE 1M alone")
    }

    struct NeverSent: Error { let opcode: HCIOpcode }

    /// Yields until `d` has been sent `opcode`, at most `turns` times: a connect that fails
    /// before it sends fails the test rather than hang it.
    func waitUntilSent(_ opcode: HCIOpcode, _ d: Driver, turns: Int = 100_000) async throws {
        for _ in 0..<turns where await !d.opcodes.contains(opcode) { await Task.yield() }
        guard await d.opcodes.contains(opcode) else { throw NeverSent(opcode: opcode) }
    }
}
