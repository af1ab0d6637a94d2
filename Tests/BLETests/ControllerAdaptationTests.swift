@testable import BLE
import BLEHCI
import BLEWire
import XCTest

/// The host adapts to what a controller says at initialisation: every read it needs has a
/// fallback when the controller answers Unknown HCI Command, it reads only what the controller
/// lists, and it sets only the LE events the controller's version defines (Core spec Vol 4 Part
/// E §4, §7.8.1, §7.8.2).
final class ControllerAdaptationTests: XCTestCase {
    typealias Controller = ControllerInitialisationTests.Controller

    /// A controller that knows only Reset and LE Read Buffer Size: no version, no command list,
    /// no features, no public address, no event masks. The start succeeds with the fallbacks.
    func testAControllerThatKnowsAlmostNothingStillStarts() async throws {
        let c = Controller([.reset: [0], .leReadBufferSizeV1: [0, 27, 0, 3]])
        let info = try await c.initialise()
        XCTAssertEqual(info.address, BDAddress(rawValue: 0), "no public address: zero, §7.4.6")
        XCTAssertEqual(info.aclBufferLength, 27)
        XCTAssertEqual(info.aclBufferCount, 3)
        XCTAssertFalse(info.aclBuffersShared)
        XCTAssertNil(info.version)
        XCTAssertNil(info.filterAcceptListSize)
        XCTAssertFalse(info.supportsDataLengthExtension)
        XCTAssertFalse(info.resolvesAddressesInController)
        XCTAssertEqual(info.linkDataLengthLimit, 27)
    }

    /// LE Read Buffer Size refused outright (not just 0): the shared buffers, and it says so.
    func testAnUnknownLEReadBufferSizeFallsBackToTheSharedBuffers() async throws {
        var answers = ControllerInitialisationTests.essentials
        answers[.readBufferSize] = [0, 0x36, 0x01, 0, 10, 0, 0, 0]
        let info = try await Controller(answers).initialise()
        XCTAssertEqual(info.aclBufferLength, 310)
        XCTAssertEqual(info.aclBufferCount, 10)
        XCTAssertTrue(info.aclBuffersShared)
        XCTAssertEqual(info.brEdrACLBuffers?.length, 310)
    }

    /// A Bluetooth 4.0 controller (HCI version 6) is asked for the LE events 4.0 defines only
    /// (bits 0–4), though the host handles more; a 4.2 one for bits 0–10; 5.2 and later for all.
    func testTheLEEventMaskHasOnlyTheBitsTheVersionDefines() async throws {
        for (version, highest) in [(UInt8(0x06), 4), (0x07, 5), (0x08, 10), (0x09, 19), (0x0B, 63)] {
            var answers = ControllerInitialisationTests.essentials
            answers[.leReadBufferSizeV1] = [0, 27, 0, 4]
            answers[.readLocalVersionInformation] = [0, version, 0, 0, version, 0xFF, 0xFF, 0, 0]
            answers[.readLocalSupportedCommands] = [0] + [UInt8](repeating: 0xFF, count: 64)
            let c = Controller(answers)
            _ = try await c.initialise()
            let asked = await c.leEventMask
            let mask = try XCTUnwrap(asked, "version \(version)")
            XCTAssertEqual((mask.rawValue >> UInt64(highest)) >> 1, 0, "version \(version): a bit above \(highest) in \(mask)")
            XCTAssertTrue(mask.contains(.connectionComplete), "version \(version)")
            if highest >= 10 { XCTAssertTrue(mask.contains(.enhancedConnectionComplete), "version \(version)") }
        }
    }

    /// The list sizes and maximum data length are read when listed (and the feature is there),
    /// and never asked of a controller that does not list them.
    func testListSizesAndDataLengthAreReadOnlyWhenListed() async throws {
        var commands = [UInt8](repeating: 0, count: 64)
        for bit in [(25, 2), (26, 6), (34, 6), (35, 3), (33, 6)] { commands[bit.0] |= 1 << UInt8(bit.1) }
        var answers = ControllerInitialisationTests.essentials
        answers[.leReadBufferSizeV1] = [0, 251, 0, 4]
        answers[.readLocalSupportedCommands] = [0] + commands
        answers[.leReadLocalSupportedFeatures] = [0, 0x61, 0, 0, 0, 0, 0, 0, 0] // encryption, DLE, LL privacy
        answers[.leReadFilterAcceptListSize] = [0, 12]
        answers[.leReadResolvingListSize] = [0, 5]
        answers[.leReadMaximumDataLength] = [0, 200, 0, 0x40, 0x06, 251, 0, 0x48, 0x08]
        let info = try await Controller(answers).initialise()
        XCTAssertEqual(info.filterAcceptListSize, 12)
        XCTAssertEqual(info.resolvingListSize, 5)
        XCTAssertEqual(info.maximumDataLength?.supportedMaxTxOctets, 200)
        XCTAssertTrue(info.supportsDataLengthExtension)
        XCTAssertEqual(info.linkDataLengthLimit, 200)
        XCTAssertFalse(info.resolvesAddressesInController, "LL Privacy without the resolving list commands listed")

        var bare = ControllerInitialisationTests.essentials
        bare[.leReadBufferSizeV1] = [0, 27, 0, 4]
        bare[.readLocalSupportedCommands] = [0] + [UInt8](repeating: 0, count: 64)
        let c = Controller(bare)
        let none = try await c.initialise()
        XCTAssertNil(none.filterAcceptListSize)
        let sent = await c.sent
        for op in [HCIOpcode.leReadFilterAcceptListSize, .leReadResolvingListSize, .leReadMaximumDataLength, .leReadBufferSizeV2,
                   .readBDADDR, .readLocalSupportedFeatures, .setEventMask, .leSetEventMask, .leReadLocalSupportedFeatures] {
            XCTAssertFalse(sent.contains(op), "\(op) sent to a controller that does not list it")
        }
        XCTAssertEqual(none.address, BDAddress(rawValue: 0), "no Read BD_ADDR listed: no public address")
    }

    /// `lists` answers by the Supported_Commands bit; a controller that did not answer the read,
    /// or a command without a bit, counts as listed.
    func testListsReadsTheCommandsBit() {
        var octets = [UInt8](repeating: 0, count: 64)
        octets[35] |= 1 << 6 // LE Set PHY
        var info = ControllerInfo(address: BDAddress(rawValue: 1), version: nil, supportedCommands: LocalSupportedCommands(octets: octets),
                                  features: nil, leFeatures: nil, aclBufferLength: 27, aclBufferCount: 1)
        XCTAssertTrue(info.lists(.leSetPHY))
        XCTAssertFalse(info.lists(.leSetDataLength))
        XCTAssertTrue(info.lists(.readLocalSupportedCommands), "no bit of its own")
        info.supportedCommands = nil
        XCTAssertTrue(info.lists(.leSetDataLength))
    }
}
