@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest
import BLETestSupport

/// `Central.syncToPeriodicAdvertising` against a scripted controller: the scan that lets the
/// controller find the train, Create Sync's parameters, reports put back together (Vol 4 Part E
/// §7.7.65.15), a truncated one marked, the sequence's end when the sync is lost (§7.7.65.16) or
/// terminated (§7.8.69), a creation that times out (Create Sync Cancel, §7.8.68), and the
/// refusals.
/// The periodic advertiser of these tests.
private let advertiser = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)

final class PeriodicSyncTests: XCTestCase {

    func open(extended: Bool = true) async throws -> (HostUnderTest, Central) {
        let t = HostUnderTest()
        await t.controller.configure { $0.listsExtendedAdvertisingCommands = extended }
        await t.controller.start()
        return (t, try await Central.open(transport: t.hostEnd))
    }

    func established(_ handle: UInt16 = 0x0007) -> HCIEvent {
        .le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(status: .success, syncHandle: handle, sid: 4, advertiser: advertiser,
                                                                            phy: .le2M, interval: 40, clockAccuracy: 5)))
    }

    func report(_ status: AdvertisingDataStatus, _ data: [UInt8], handle: UInt16 = 0x0007) -> HCIEvent {
        .le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(syncHandle: handle, txPower: 4, rssi: -60, dataStatus: status, data: data)))
    }

    func testASyncIsMadeWhileScanningAndItsReportsArriveWholeUntilItIsLost() async throws {
        let (t, central) = try await open()
        let syncing = Task { try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4, supervisionTimeout: .seconds(2)) }
        // Scanning first, so the controller can hear the set's SyncInfo; then Create Sync.
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetExtendedScanEnable && $0.parameters.first == 1 }
        let create = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        XCTAssertEqual(create.parameters, [0, 4, 1] + advertiser.address.littleEndianBytes + [0, 0, 200, 0, 0],
                       "options, SID, random, address, skip 0, 2 s in 10 ms units, any CTE")
        await t.controller.sendNow(established())
        let sync = try await syncing.value
        XCTAssertEqual(sync.advertiser, advertiser)
        XCTAssertEqual(sync.sid, 4)
        XCTAssertEqual(sync.phy, .le2M)
        XCTAssertEqual(sync.interval, .milliseconds(50))
        // The scan ends once synced.
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetExtendedScanEnable && $0.parameters.first == 0 }

        let reading = Task { () -> ([PeriodicAdvertisement], Error?) in
            var got: [PeriodicAdvertisement] = []
            do {
                for try await a in sync { got.append(a) }
            } catch { return (got, error) }
            return (got, nil)
        }
        await t.controller.sendNow(report(.incompleteMoreToCome, [3, 0xFF, 0x59]))
        await t.controller.sendNow(report(.complete, [0x00]))
        await t.controller.sendNow(report(.incompleteMoreToCome, [5, 0x09]))
        await t.controller.sendNow(report(.incompleteTruncated, [0x41]))
        await t.controller.sendNow(report(.complete, [2, 1, 6], handle: 0x0009)) // another sync's: not this one's
        await t.controller.sendNow(.le(.periodicAdvertisingSyncLost(syncHandle: 0x0007)))
        let (got, error) = await reading.value
        XCTAssertEqual(got.map(\.bytes), [[3, 0xFF, 0x59, 0x00], [5, 0x09, 0x41]])
        XCTAssertEqual(got.map(\.truncated), [false, true])
        XCTAssertEqual(got.first?.rssi, -60)
        XCTAssertEqual(got.first?.txPower, 4)
        guard case .periodicSyncLost? = error as? BLEError else { return XCTFail("\(String(describing: error))") }
        await central.close()
    }

    /// A chain past 1,650 octets (the most a set holds, Vol 4 Part E §7.8.57) is handed on once,
    /// truncated, its tail skipped; the next chain is whole.
    func testAChainPastTheMaximumIsHandedOnTruncatedOnceAndItsTailSkipped() async throws {
        let (t, central) = try await open()
        let sync = try await synced(t, central)
        let reading = Task { () -> [PeriodicAdvertisement] in
            var got: [PeriodicAdvertisement] = []
            for try await a in sync {
                got.append(a)
                if got.count == 2 { break }
            }
            return got
        }
        for _ in 0..<7 { await t.controller.sendNow(report(.incompleteMoreToCome, [UInt8](repeating: 0xAB, count: 247))) }
        await t.controller.sendNow(report(.complete, [0xCD]))
        await t.controller.sendNow(report(.complete, [2, 1, 6]))
        let got = try await reading.value
        XCTAssertEqual(got.map(\.bytes.count), [1650, 3])
        XCTAssertEqual(got.map(\.truncated), [true, false])
        XCTAssertEqual(got.last?.bytes, [2, 1, 6])
        await central.close()
    }

    /// A sync to `advertiser` SID 4, established as handle 7.
    func synced(_ t: HostUnderTest, _ central: Central) async throws -> PeriodicSync {
        let syncing = try await creating(t, central)
        await t.controller.sendNow(established())
        return try await syncing.value
    }

    /// Starts a sync to `advertiser` SID 4 and waits for its Create Sync.
    func creating(_ t: HostUnderTest, _ central: Central, timeout: Duration = .seconds(10)) async throws -> Task<PeriodicSync, Error> {
        let before = await t.controller.commands.filter { $0.opcode == .lePeriodicAdvertisingCreateSync }.count
        let syncing = Task { try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4, timeout: timeout) }
        try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync, count: before + 1)
        return syncing
    }

    /// A Create Sync Cancel the controller refuses, or one answered with no Sync Established
    /// after it: the attempt fails with `.timeout` all the same (not a wait for ever), and the
    /// next creation is not refused as busy.
    func testACancelThatIsRefusedOrNeverAnsweredStillEndsTheAttempt() async throws {
        let (t, central) = try await open()
        await t.controller.configure { c in
            c.set(.lePeriodicAdvertisingCreateSyncCancel) { cmd in
                [.commandComplete(numHCICommandPackets: 1, opcode: cmd.opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue])]
            }
        }
        let refused = try await creating(t, central, timeout: .milliseconds(200))
        do {
            _ = try await refused.value
            XCTFail("synced to nothing")
        } catch BLEError.timeout {}
        await t.controller.configure { c in
            c.set(.lePeriodicAdvertisingCreateSyncCancel) { cmd in [.commandComplete(numHCICommandPackets: 1, opcode: cmd.opcode, returnParameters: [0])] }
        }
        let unanswered = try await creating(t, central, timeout: .milliseconds(200))
        do {
            _ = try await unanswered.value
            XCTFail("synced to nothing")
        } catch BLEError.timeout {}
        let pending = await central.host.run { $0.periodicSyncs.isCreating }
        XCTAssertFalse(pending)
        await central.close()
    }

    /// The caller's task cancelled: the attempt is cancelled on the controller too.
    func testCancellingTheCallerCancelsTheAttempt() async throws {
        let (t, central) = try await open()
        let syncing = try await creating(t, central)
        syncing.cancel()
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSyncCancel)
        do {
            _ = try await syncing.value
            XCTFail("a cancelled attempt synced")
        } catch is CancellationError {}
        await central.close()
    }

    /// A caller cancelled before its Create Sync went out: none goes out, and the next
    /// attempt is not refused as busy.
    func testACallerCancelledAtOnceSendsNoCreateSync() async throws {
        let (t, central) = try await open()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4)
        }
        do {
            _ = try await cancelled.value
            XCTFail("a cancelled caller synced")
        } catch is CancellationError {}
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(sent.contains(.lePeriodicAdvertisingCreateSync))
        let sync = try await synced(t, central)
        XCTAssertEqual(sync.sid, 4)
        await central.close()
    }

    /// A reader that breaks out of the loop ends the sync on the controller, even with the
    /// `PeriodicSync` gone.
    func testBreakingOutOfTheLoopEndsTheSync() async throws {
        let (t, central) = try await open()
        let reading = Task { () -> [UInt8]? in
            for try await a in try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4) { return a.bytes }
            return nil
        }
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        await t.controller.sendNow(established())
        await t.controller.sendNow(report(.complete, [2, 1, 6]))
        let first = try await reading.value
        XCTAssertEqual(first, [2, 1, 6])
        let terminate = try await t.controller.waitForCommand(.lePeriodicAdvertisingTerminateSync)
        XCTAssertEqual(terminate.parameters, [7, 0])
        await central.close()
    }

    /// Reports and a loss that come right behind Sync Established reach the stream.
    func testReportsRightBehindTheEstablishedEventAreKept() async throws {
        let (t, central) = try await open()
        let syncing = try await creating(t, central)
        await t.controller.sendNow(established())
        await t.controller.sendNow(report(.complete, [2, 1, 6]))
        await t.controller.sendNow(.le(.periodicAdvertisingSyncLost(syncHandle: 0x0007)))
        var got: [[UInt8]] = []
        do {
            for try await a in try await syncing.value { got.append(a.bytes) }
            XCTFail("the loss ends the sequence with an error")
        } catch BLEError.periodicSyncLost {}
        XCTAssertEqual(got, [[2, 1, 6]])
        await central.close()
    }

    /// A Sync Established for another SID (a late answer to an attempt given up) is not taken
    /// for the pending one, and is ended on the controller.
    func testASyncForAnotherSetIsNotTakenForThePendingOne() async throws {
        let (t, central) = try await open()
        let syncing = try await creating(t, central)
        await t.controller.sendNow(.le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
            status: .success, syncHandle: 0x0003, sid: 9, advertiser: advertiser, phy: .le1M, interval: 40, clockAccuracy: 5))))
        let stray = try await t.controller.waitForCommand(.lePeriodicAdvertisingTerminateSync)
        XCTAssertEqual(stray.parameters, [3, 0])
        await t.controller.sendNow(established())
        let sync = try await syncing.value
        XCTAssertEqual(sync.sid, 4)
        await central.close()
    }

    /// Controllers give a new sync the handle of one that ended: the old `PeriodicSync`'s
    /// terminate (or release) leaves the new one alone.
    func testAnEndedSyncsTerminateLeavesANewSyncWithItsHandleAlone() async throws {
        let (t, central) = try await open()
        var syncing = try await creating(t, central)
        await t.controller.sendNow(established())
        let old = try await syncing.value
        await t.controller.sendNow(.le(.periodicAdvertisingSyncLost(syncHandle: 0x0007)))
        do { for try await _ in old {} } catch BLEError.periodicSyncLost {}
        syncing = try await creating(t, central)
        await t.controller.sendNow(established())
        let new = try await syncing.value
        await old.terminate()
        await t.controller.sendNow(report(.complete, [2, 1, 6]))
        var reports = new.makeAsyncIterator()
        let first = try await reports.next()
        XCTAssertEqual(first?.bytes, [2, 1, 6], "the new sync still runs")
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(sent.contains(.lePeriodicAdvertisingTerminateSync), "the new sync was not ended")
        await central.close()
    }

    /// Any of several advertisers: the Periodic Advertiser List is cleared and filled, Create
    /// Sync uses it, and the sync says which advertiser was found; more than the list holds is
    /// refused before anything is sent.
    func testASyncToAnyOfSeveralUsesThePeriodicAdvertiserList() async throws {
        let (t, central) = try await open()
        let other = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_77), type: .public)
        let syncing = Task { try await central.syncToPeriodicAdvertising(ofAnyOf: [(advertiser, 4), (other, 9)]) }
        let create = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        XCTAssertEqual(create.parameters.first, PeriodicSyncOptions.useAdvertiserList.rawValue)
        let commands = await t.controller.commands
        XCTAssertEqual(commands.map(\.opcode).filter { [.leClearPeriodicAdvertiserList, .leAddDeviceToPeriodicAdvertiserList].contains($0) },
                       [.leClearPeriodicAdvertiserList, .leAddDeviceToPeriodicAdvertiserList, .leAddDeviceToPeriodicAdvertiserList])
        let added = commands.filter { $0.opcode == .leAddDeviceToPeriodicAdvertiserList }.map(\.parameters)
        XCTAssertEqual(added, [[1] + advertiser.address.littleEndianBytes + [4], [0] + other.address.littleEndianBytes + [9]])
        await t.controller.sendNow(.le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
            status: .success, syncHandle: 0x0005, sid: 9, advertiser: other, phy: .le1M, interval: 40, clockAccuracy: 5))))
        let sync = try await syncing.value
        XCTAssertEqual(sync.advertiser, other)
        XCTAssertEqual(sync.sid, 9)
        let five = (0..<5).map { (DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_10 + UInt64($0)), type: .random), UInt8($0)) }
        do {
            _ = try await central.syncToPeriodicAdvertising(ofAnyOf: five)
            XCTFail("five on a list of four")
        } catch BLEError.invalidArgument {}
        await central.close()
    }

    /// `keepScanning`: the scan goes on while synced, and ends with the sync.
    func testKeepScanningScansUntilTheSyncEnds() async throws {
        let (t, central) = try await open()
        let syncing = Task { try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4, keepScanning: true) }
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        await t.controller.sendNow(established())
        let sync = try await syncing.value
        let scanning = await central.host.run { $0.scanning.isRadioEnabled }
        XCTAssertTrue(scanning)
        await sync.terminate()
        let terminate = try await t.controller.waitForCommand(.lePeriodicAdvertisingTerminateSync)
        XCTAssertEqual(terminate.parameters, [7, 0])
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetExtendedScanEnable && $0.parameters.first == 0 }
        var ended = true
        for try await _ in sync { ended = false }
        XCTAssertTrue(ended, "a terminated sync's sequence ends, without an error")
        await central.close()
    }

    /// No train heard: after the timeout the attempt is cancelled on the controller and the call
    /// fails with `.timeout`; a second creation meanwhile is refused as busy.
    func testACreationThatHearsNothingIsCancelledAndTimesOut() async throws {
        let (t, central) = try await open()
        let syncing = Task { try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4, timeout: .milliseconds(300)) }
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        do {
            _ = try await central.syncToPeriodicAdvertising(of: advertiser, sid: 5)
            XCTFail("a second creation while one is pending")
        } catch BLEError.busy {}
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSyncCancel)
        do {
            _ = try await syncing.value
            XCTFail("synced to nothing")
        } catch BLEError.timeout {}
        let pending = await central.host.run { $0.periodicSyncs.isCreating }
        XCTAssertFalse(pending)
        await central.close()
    }

    /// A controller without the extended commands, or arguments out of range: refused before
    /// anything is sent.
    func testSyncIsRefusedWhereItCannotRun() async throws {
        let (t, central) = try await open(extended: false)
        do {
            _ = try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4)
            XCTFail("a sync on a host driving the legacy commands")
        } catch BLEError.unsupported {}
        for (sid, supervision) in [(UInt8(16), Duration.seconds(5)), (1, .milliseconds(50)), (1, .seconds(200))] {
            do {
                _ = try await central.syncToPeriodicAdvertising(of: advertiser, sid: sid, supervisionTimeout: supervision)
                XCTFail("SID \(sid), supervision \(supervision)")
            } catch BLEError.invalidArgument {}
        }
        let sent = await t.controller.commands.map(\.opcode)
        XCTAssertFalse(sent.contains(.lePeriodicAdvertisingCreateSync))
        await central.close()
    }

    /// A failed controller ends a sync's sequence with its error.
    func testAFailedControllerEndsTheSync() async throws {
        let (t, central) = try await open()
        let sync = try await synced(t, central)
        await t.controller.sendNow(.hardwareError(code: 1))
        do {
            for try await _ in sync {}
            XCTFail("the sequence ended normally")
        } catch BLEError.hci {}
        await central.close()
    }
}

/// Periodic Advertising Sync Transfer (Vol 4 Part E §7.8.89–§7.8.92, §7.7.65.24) against a
/// scripted controller: rootcanal 1.10 lists none of its commands, so no peer of ours carries it.
final class PeriodicSyncTransferTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_AA_BB_CC_DD_EE), type: .random)

    func testASyncAndASetsPeriodicAdvertisingAreHandedToAPeer() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.listsExtendedAdvertisingCommands = true }
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let peripheral = try await central.connect(peer, timeout: .seconds(5))
        let syncing = Task { try await central.syncToPeriodicAdvertising(of: advertiser, sid: 4) }
        _ = try await t.controller.waitForCommand(.lePeriodicAdvertisingCreateSync)
        await t.controller.sendNow(.le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
            status: .success, syncHandle: 0x0007, sid: 4, advertiser: advertiser, phy: .le1M, interval: 40, clockAccuracy: 5))))
        let sync = try await syncing.value
        try await peripheral.transferPeriodicSync(sync, serviceData: 0x1234)
        let transfer = try await t.controller.waitForCommand(.lePeriodicAdvertisingSyncTransfer)
        XCTAssertEqual(transfer.parameters, [0x40, 0x00, 0x34, 0x12, 0x07, 0x00], "link 0x0040, service data, sync 7")

        let manager = PeripheralManager(sharingControllerWith: central)
        let plain = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("x").build())
        do {
            try await peripheral.transferAdvertisingSet(plain)
            XCTFail("a set without periodic advertising")
        } catch BLEError.invalidArgument {}
        let periodic = try await manager.startAdvertisingSet(AdvertisingData(), periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)),
                                                                                            AdvertisingData.Builder().localName("p").build()))
        try await peripheral.transferAdvertisingSet(periodic, serviceData: 9)
        let info = try await t.controller.waitForCommand(.lePeriodicAdvertisingSetInfoTransfer)
        XCTAssertEqual(info.parameters, [0x40, 0x00, 9, 0, periodic.handle])

        await sync.terminate()
        do {
            try await peripheral.transferPeriodicSync(sync)
            XCTFail("a terminated sync")
        } catch BLEError.invalidArgument {}
        try await peripheral.disconnect()
        do {
            try await peripheral.transferAdvertisingSet(periodic)
            XCTFail("after the link ended")
        } catch BLEError.notConnected {}
        await central.close()
    }

    func testASyncAPeerTransfersArrivesWithItsReports() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.listsExtendedAdvertisingCommands = true }
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        _ = try await central.connect(peer, timeout: .seconds(5))
        let transfers = try await central.periodicSyncTransfers(supervisionTimeout: .seconds(2))
        let defaults = try await t.controller.waitForCommand(.leSetDefaultPeriodicAdvertisingSyncTransferParameters)
        XCTAssertEqual(defaults.parameters, [2, 0, 0, 200, 0, 0], "synced with reports, skip 0, 2 s, any CTE")
        let perLink = try await t.controller.waitForCommand(.leSetPeriodicAdvertisingSyncTransferParameters)
        XCTAssertEqual(perLink.parameters, [0x40, 0x00, 2, 0, 0, 200, 0, 0], "and the link already up")

        let received = LEPeriodicSyncTransferReceived(connectionHandle: 0x0040, serviceData: 0x0102, sync: LEPeriodicSyncEstablished(
            status: .success, syncHandle: 0x0011, sid: 2, advertiser: advertiser, phy: .leCoded, interval: 80, clockAccuracy: 5))
        await t.controller.sendNow(.le(.periodicAdvertisingSyncTransferReceived(received)))
        var iterator = transfers.makeAsyncIterator()
        let transfer = try await XCTUnwrapAsync(await iterator.next())
        XCTAssertEqual(transfer.from, peer)
        XCTAssertEqual(transfer.serviceData, 0x0102)
        XCTAssertEqual(transfer.sync.sid, 2)
        XCTAssertEqual(transfer.sync.phy, .leCoded)
        XCTAssertEqual(transfer.sync.interval, .milliseconds(100))
        await t.controller.sendNow(.le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(syncHandle: 0x0011, rssi: -50, data: [2, 1, 6]))))
        var reports = transfer.sync.makeAsyncIterator()
        let first = try await reports.next()
        XCTAssertEqual(first?.bytes, [2, 1, 6])
        await central.close()
        let after = await iterator.next()
        XCTAssertNil(after, "the transfers end with the host")
    }
}
