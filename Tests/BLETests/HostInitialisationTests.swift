@testable import BLE
import BLERuntime
import BLEHCI
import BLETransport
import BLEWire
import XCTest
import BLETestSupport

final class HostInitialisationTests: XCTestCase {
    func testInitialisationSequenceFollowsTheSpec() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertEqual(sent, [
            .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
            .readBDADDR, .leReadBufferSizeV2, .readBufferSize, .setEventMask, .leSetEventMask, .leReadLocalSupportedFeatures,
            // The list sizes, which it lists; not LE Read Maximum Data Length: no DLE feature.
            .leReadFilterAcceptListSize, .leReadResolvingListSize,
        ])
        XCTAssertEqual(central.controllerInfo.address, BDAddress(rawValue: 0x00_1B_DC_00_00_01))
        XCTAssertEqual(central.controllerInfo.aclBufferLength, 27)
        XCTAssertEqual(central.controllerInfo.aclBufferCount, 4)
        let state = await central.state
        XCTAssertEqual(state, .poweredOn)
        await central.close()
    }

    func testBufferSizeFallsBackToV1ThenToSharedBuffers() async throws {
        let t = HostUnderTest()
        await t.controller.configure { c in
            c.leBufferV2 = nil
            c.leBufferV1 = (0, 0)
            c.sharedBuffer = (310, 10)
        }
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(sent.contains(.leReadBufferSizeV2), "v2 is not listed in the supported commands, so it is not sent")
        XCTAssertTrue(sent.contains(.leReadBufferSizeV1))
        XCTAssertTrue(sent.contains(.readBufferSize))
        XCTAssertEqual(central.controllerInfo.aclBufferLength, 310)
        XCTAssertEqual(central.controllerInfo.aclBufferCount, 10)
        await central.close()
    }

    func testUnknownCommandIsACapabilityAnswer() async throws {
        let t = HostUnderTest()
        await t.controller.set(.readLocalSupportedFeatures) { c in
            [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.unknownCommand.rawValue])]
        }
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        XCTAssertNil(central.controllerInfo.features)
        await central.close()
    }

    func testResetFailureIsATypedError() async throws {
        let t = HostUnderTest()
        await t.controller.set(.reset) { c in
            [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.hardwareFailure.rawValue])]
        }
        await t.controller.start()
        do {
            _ = try await Central.open(transport: t.hostEnd)
            XCTFail("expected an error")
        } catch let BLEError.hci(.commandFailed(opcode, status)) {
            XCTAssertEqual(opcode, .reset)
            XCTAssertEqual(status, .hardwareFailure)
        }
    }

    func testSilentControllerTimesOutInsteadOfHanging() async throws {
        let t = HostUnderTest()
        await t.controller.set(.reset) { _ in nil }
        await t.controller.start()
        let clock = ManualClock()
        let open = Task { try await Central.open(transport: t.hostEnd, clock: clock) }
        await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty }
        clock.advance(by: .seconds(6))
        // HCI Reset is sent once more after the first timeout (a controller may lose the first
        // command after power-on, VirtualControllerQuirk.losesFirstCommand); then it fails.
        await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty }
        clock.advance(by: .seconds(6))
        do {
            _ = try await open.value
            XCTFail("expected a timeout")
        } catch let BLEError.hci(.commandTimeout(opcode)) {
            XCTAssertEqual(opcode, .reset)
        }
    }

    func testHardwareErrorFailsPendingWorkAndLaterCalls() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        await t.controller.set(.leSetScanParameters) { _ in nil }
        let scan = Task { () -> (any Error)? in
            do {
                for try await _ in central.scan() {}
                return nil
            } catch { return error }
        }
        _ = try await t.controller.waitForCommand(.leSetScanParameters)
        await t.controller.sendNow(.hardwareError(code: 0x42))
        let error = await scan.value
        guard case BLEError.hci(.hardwareError(code: 0x42))? = error else {
            return XCTFail("expected the hardware error, got \(String(describing: error))")
        }
        let state = await central.state
        XCTAssertEqual(state, .poweredOff)
        do {
            _ = try await central.connect(DeviceAddress(BDAddress(rawValue: 1), type: .public))
            XCTFail("expected the stored failure")
        } catch BLEError.hci(.hardwareError) {}
        await central.close()
    }

    func testTransportLossFailsEverything() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        t.hostEnd.fail()
        await waitUntil(within: .seconds(10)) { await central.state == .poweredOff }
        do {
            _ = try await central.connect(DeviceAddress(BDAddress(rawValue: 1), type: .public))
            XCTFail("expected a transport error")
        } catch BLEError.transport {}
    }
}
