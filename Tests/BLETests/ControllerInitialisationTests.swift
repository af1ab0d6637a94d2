@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `ControllerInitialisation` on its own, against a `HostServices` double that answers each
/// command from a table: the fallbacks of Vol 4 Part E §7.8.2 and the reads a controller may
/// not know.
final class ControllerInitialisationTests: XCTestCase {
    actor Controller: PartDriver {
        var answers: [HCIOpcode: [UInt8]]
        var sent: [HCIOpcode] = []
        /// The LE event mask asked for.
        var leEventMask: LEEventMask?
        nonisolated let configuration: HostConfiguration
        init(_ answers: [HCIOpcode: [UInt8]], configuration: HostConfiguration = HostConfiguration()) {
            self.answers = answers
            self.configuration = configuration
        }

        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            sent.append(cmd.opcode)
            if cmd.opcode == .leSetEventMask {
                leEventMask = LEEventMask(rawValue: cmd.parameters.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) })
            }
            guard let a = answers[cmd.opcode] else {
                throw BLEError.hci(.commandFailed(opcode: cmd.opcode, status: .unknownCommand))
            }
            return a
        }
        func spawn(_ name: String, _ body: @escaping @Sendable () async throws -> Void) -> UInt64 { 0 }
        func initialise() async throws -> ControllerInfo { try await ControllerInitialisation.run(self) }
    }

    /// What every controller answers: Reset, BD_ADDR, the event masks.
    static let essentials: [HCIOpcode: [UInt8]] = [
        .reset: [0], .readBDADDR: [0, 6, 5, 4, 3, 2, 1], .setEventMask: [0], .leSetEventMask: [0],
    ]

    /// A controller that knows none of the optional reads and reports an LE buffer length of 0:
    /// the shared ACL buffers are used (§7.8.2), and the unknown reads are nil, not a failure.
    func testAControllerWithSharedBuffersAndNoOptionalReads() async throws {
        var answers = Self.essentials
        answers[.leReadBufferSizeV1] = [0, 0, 0, 0]
        answers[.readBufferSize] = [0, 0xFD, 0x03, 0, 8, 0, 0, 0]
        let c = Controller(answers)
        let info = try await c.initialise()
        XCTAssertEqual(info.aclBufferLength, 1021)
        XCTAssertEqual(info.aclBufferCount, 8)
        XCTAssertNil(info.version)
        XCTAssertNil(info.supportedCommands)
        XCTAssertNil(info.leFeatures)
        XCTAssertEqual(info.address, BDAddress(rawValue: 0x01_02_03_04_05_06))
        let sent = await c.sent
        XCTAssertFalse(sent.contains(.leReadBufferSizeV2), "v2 asked of a controller that does not list it")
    }

    /// A controller that lists LE Read Buffer Size v2 gets it, and its answer is used.
    func testAControllerListingBufferSizeV2IsAskedThat() async throws {
        var answers = Self.essentials
        var commands = [UInt8](repeating: 0, count: 65)
        // Supported Commands octet 41 bit 5: LE Read Buffer Size v2.
        commands[1 + 41] = 1 << 5
        answers[.readLocalSupportedCommands] = commands
        answers[.leReadBufferSizeV2] = [0, 251, 0, 6, 0, 0, 0]
        let c = Controller(answers)
        let info = try await c.initialise()
        XCTAssertEqual(info.aclBufferLength, 251)
        XCTAssertEqual(info.aclBufferCount, 6)
        let sent = await c.sent
        XCTAssertFalse(sent.contains(.leReadBufferSizeV1))
    }

    /// No ACL buffers at all is a typed error, not a flow controller with none.
    func testAControllerWithNoBuffersFailsTheStart() async throws {
        var answers = Self.essentials
        answers[.leReadBufferSizeV1] = [0, 0, 0, 0]
        answers[.readBufferSize] = [0, 0, 0, 0, 0, 0, 0, 0]
        do {
            _ = try await Controller(answers).initialise()
            XCTFail("started with no ACL buffers")
        } catch BLEError.unsupported {}
    }

    /// The extended command set counts as supported only when every command the host uses is
    /// listed (§6.27): Set Advertising Set Random Address, the advertising parameters, data, scan
    /// response, enable and number of sets (octet 36 bits 1–5, 7), scan parameters and enable,
    /// extended create connection (octet 37 bits 5–7); one missing is legacy.
    func testTheExtendedCommandsCountOnlyWhenEveryOneTheHostUsesIsListed() async throws {
        let all = [(36, 1), (36, 2), (36, 3), (36, 4), (36, 5), (36, 7), (37, 5), (37, 6), (37, 7)]
        var cases: [([(Int, Int)], Bool)] = [(all, true), ([], false)]
        for missing in all.indices { cases.append((all.enumerated().filter { $0.offset != missing }.map(\.element), false)) }
        for (bits, expected) in cases {
            var answers = Self.essentials
            var commands = [UInt8](repeating: 0, count: 65)
            for (octet, bit) in bits { commands[1 + octet] |= 1 << UInt8(bit) }
            answers[.readLocalSupportedCommands] = commands
            answers[.leReadBufferSizeV1] = [0, 27, 0, 4]
            let info = try await Controller(answers).initialise()
            XCTAssertEqual(info.supportsExtendedAdvertisingCommands, expected, "\(bits)")
        }
    }

    /// The PHYs a controller has come from its LE features: LE 1M always, LE 2M (bit 8) and LE
    /// Coded (bit 11) when listed; none listed, or no answer, is LE 1M alone.
    func testTheSupportedPHYsComeFromTheLEFeatures() async throws {
        for (features, phys) in [([UInt8](repeating: 0, count: 8), LEPHYSet.le1M), ([0x01, 0x01, 0, 0, 0, 0, 0, 0], [.le1M, .le2M]),
                                 ([0, 0x09, 0, 0, 0, 0, 0, 0], [.le1M, .le2M, .leCoded]), ([0, 0x08, 0, 0, 0, 0, 0, 0], [.le1M, .leCoded])] {
            var answers = Self.essentials
            answers[.leReadBufferSizeV1] = [0, 27, 0, 4]
            answers[.leReadLocalSupportedFeatures] = [0] + features
            let info = try await Controller(answers).initialise()
            XCTAssertEqual(info.supportedPHYs, phys, "\(features)")
        }
        var answers = Self.essentials
        answers[.leReadBufferSizeV1] = [0, 27, 0, 4]
        let info = try await Controller(answers).initialise()
        XCTAssertEqual(info.supportedPHYs, .le1M, "a controller that did not answer")
    }

    /// A controller with every extended command: a host driving it with them asks how many sets
    /// it runs and how much data each holds, and for the events only those commands bring (LE
    /// Advertising Set Terminated, LE Channel Selection Algorithm, the periodic sync events); a
    /// host configured for the legacy commands asks none of it (Vol 4 Part E §3.1.1).
    func testTheExtendedCapacityAndEventsAreAskedOnlyByAHostUsingTheExtendedCommands() async throws {
        var answers = Self.essentials
        answers[.readLocalSupportedCommands] = [0] + [UInt8](repeating: 0xFF, count: 64)
        answers[.leReadBufferSizeV2] = [0, 251, 0, 6, 0, 0, 0]
        answers[.leReadNumberOfSupportedAdvertisingSets] = [0, 6]
        answers[.leReadMaximumAdvertisingDataLength] = [0, 0x72, 0x06]
        let extended = Controller(answers)
        let info = try await extended.initialise()
        XCTAssertEqual(info.advertisingSets, 6)
        XCTAssertEqual(info.maximumAdvertisingDataLength, 1650)
        let asked = await extended.leEventMask
        let mask = try XCTUnwrap(asked)
        XCTAssertTrue(mask.isSuperset(of: [.advertisingSetTerminated, .channelSelectionAlgorithm, .periodicAdvertisingSyncEstablished,
                                           .periodicAdvertisingReport, .periodicAdvertisingSyncLost, .periodicAdvertisingSyncTransferReceived]))

        var configuration = HostConfiguration()
        configuration.advertisingCommands = .legacy
        let legacy = Controller(answers, configuration: configuration)
        let legacyInfo = try await legacy.initialise()
        XCTAssertNil(legacyInfo.advertisingSets)
        XCTAssertNil(legacyInfo.maximumAdvertisingDataLength)
        let sent = await legacy.sent
        XCTAssertFalse(sent.contains(.leReadNumberOfSupportedAdvertisingSets))
        XCTAssertFalse(sent.contains(.leReadMaximumAdvertisingDataLength))
        let legacyAsked = await legacy.leEventMask
        let legacyMask = try XCTUnwrap(legacyAsked)
        XCTAssertEqual(legacyMask, LEEventMask.default.union(.channelSelectionAlgorithm),
                       "no event of the extended commands for a host that does not use them; the channel selection algorithm of any link")
    }
}
