@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

extension AdvertisingSetCoordinatorTests {
    /// A double of the host for `AdvertisingSetCoordinator` and set 0's `AdvertisingCoordinator`:
    /// it records and answers commands, holds a link table, and lets a test run code while a
    /// command is in flight (`during`) or make that command fail (`failInFlight`).
    actor Driver: AdvertisingSetDriver, LinkTableDouble, RecordingDriver {
        let advertising = AdvertisingCoordinator()
        let advertisingSets = AdvertisingSetCoordinator()
        var record = DriverRecord()
        var links = LinkTable()
        var ownAddressType: OwnAddressType = .public
        var ownRandomAddress: BDAddress?
        var usesExtendedCommands = true
        var info: ControllerInfo? = Driver.extendedInfo()
        var reports: [PeripheralManagerEvent] = []
        var advertisingSetZeroInUse: Bool { advertisingSets.holdsSetZero }
        var ownAdvertisingAddress: DeviceAddress { DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public) }

        init() { record.answers[.leSetExtendedAdvertisingParameters] = [0x05] }

        /// Each command gives the actor up once before its answer, as a real controller's round
        /// trip does, so other calls on the host can run in between.
        var yields = false
        /// Delivered as if it arrived while LE Set Extended Advertising Enable (on) was in flight.
        var terminateOnEnable: LEAdvertisingSetTerminated?
        /// Run once when the command of this opcode (and first parameter octet, if given) is sent,
        /// before its answer: what arrives or runs while it is in flight.
        var onCommand: [(opcode: HCIOpcode, first: UInt8?, body: @Sendable (isolated Driver) async -> Void)] = []
        func during(_ opcode: HCIOpcode, first: UInt8? = nil, _ body: @escaping @Sendable (isolated Driver) async -> Void) {
            onCommand.append((opcode, first, body))
        }
        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            if yields { await Task.yield() }
            if let i = onCommand.firstIndex(where: { $0.opcode == cmd.opcode && ($0.first == nil || $0.first == cmd.parameters.first) }) {
                let hook = onCommand.remove(at: i)
                let sent = Result { try record.answer(cmd) }
                await hook.body(self)
                // The hook may have made this command fail (`failAnswer`).
                if failAnswer {
                    failAnswer = false
                    throw BLEError.busy("the controller refused \(cmd.opcode)")
                }
                return try sent.get()
            }
            if cmd.opcode == .leSetExtendedAdvertisingEnable, cmd.parameters.first == 1, let t = terminateOnEnable {
                terminateOnEnable = nil
                let answer = try record.answer(cmd)
                _ = advertisingSets.terminated(t, self)
                return answer
            }
            return try record.answer(cmd)
        }
        func yieldOnCommands() { yields = true }
        /// Set by a `during` hook: the command in flight fails.
        var failAnswer = false
        /// A task a hook started (its outcome read by the test).
        var pending: Task<Void, any Error>?
        func failInFlight() { failAnswer = true }
        func terminate(onEnable t: LEAdvertisingSetTerminated) { terminateOnEnable = t }
        func failOnce(_ opcode: HCIOpcode) { record.failingOnce.insert(opcode) }
        func succeed(_ opcode: HCIOpcode) { record.failing.remove(opcode) }
        func startLegacy(_ kind: AdvertisingParameters.Kind, scanResponse: AdvertisingData?) async throws {
            try await advertising.start(AdvertisingParameters(kind: kind), data: AdvertisingData.Builder().localName("L").build(), scanResponse: scanResponse, self)
        }
        func stopLegacy() async throws { try await advertising.stop(self) }
        func legacyTerminated(_ event: LEAdvertisingSetTerminated) { advertising.setTerminated(event, self) }
        func startLegacy(_ parameters: AdvertisingParameters) async throws {
            try await advertising.start(parameters, data: AdvertisingData.Builder().localName("L").build(), scanResponse: nil, self)
        }
        func pauseLegacy() async throws { try await advertising.pause(self) }
        func resumeLegacy() async { await advertising.resume(self) }
        var legacyEnabled: Bool? { advertising.state?.enabled }

        static func extendedInfo(sets: Int = 4, maximum: Int = 1650, features: LESupportedFeatures = [.le2MPHY, .leCodedPHY]) -> ControllerInfo {
            var info = ControllerInfo(address: BDAddress(rawValue: 0x00_1B_DC_00_00_01), version: nil,
                                      supportedCommands: LocalSupportedCommands(octets: [UInt8](repeating: 0xFF, count: 64)),
                                      features: nil, leFeatures: features, aclBufferLength: 27, aclBufferCount: 4)
            info.advertisingSets = sets
            info.maximumAdvertisingDataLength = maximum
            return info
        }

        func prepareRadioForAdvertising() async {}
        func report(_ event: PeripheralManagerEvent) { reports.append(event) }
        func setInfo(_ info: ControllerInfo?) { self.info = info }
        func legacyHost() { usesExtendedCommands = false }
        func usePrivacy(_ address: BDAddress) {
            ownAddressType = .random
            ownRandomAddress = address
        }
        func fail(_ opcode: HCIOpcode) { record.failing.insert(opcode) }
        func clearCommands() { record.commands = [] }

        func start(_ parameters: AdvertisingSetParameters = AdvertisingSetParameters(), data: [UInt8] = [2, 1, 6], scanResponse: [UInt8]? = nil,
                   periodic: (parameters: PeriodicAdvertisingParameters, data: [UInt8])? = nil) async throws -> AdvertisingSet {
            try await advertisingSets.start(parameters, data: data, scanResponse: scanResponse, periodic: periodic, self)
        }
        func update(_ handle: UInt8, _ kind: AdvertisingDataKind, _ bytes: [UInt8]) async throws {
            try await advertisingSets.update(handle, kind, bytes, self)
        }
        func stop(_ handle: UInt8) async throws { try await advertisingSets.stop(handle, self) }
        func connect(handle: UInt16) {
            links[handle] = .testPeripheralLink(handle: handle)
            advertisingSets.linkOpened(handle: handle, self)
        }
        func terminated(_ event: LEAdvertisingSetTerminated) -> Bool { advertisingSets.terminated(event, self) }
        func linkEnded(_ handle: UInt16) { advertisingSets.linkEnded(handle: handle, self) }
        func pause() async throws { try await advertisingSets.pause(self) }
        func resume() async { await advertisingSets.resume(self) }
        func isEnabled(_ handle: UInt8) -> Bool? { advertisingSets.records[handle]?.enabled }
        var runningSets: Int { advertisingSets.records.count }
        func startLegacy() async throws {
            try await advertising.start(AdvertisingParameters(), data: AdvertisingData.Builder().localName("L").build(), scanResponse: nil, self)
        }
    }
}
