import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// Bluetooth 5 advertising in the virtual controller and medium, driven with HCI commands and
/// no hosts: the rule against mixing command sets, report fragments and their timing on the
/// air, the limits a set's data must keep, set and scan durations, event limits, and syncs.
final class VirtualMediumExtendedAdvertisingTests: XCTestCase {
    var medium = VirtualMedium()
    var advertiser = VirtualMedium.ControllerID(rawValue: 0)
    var scanner = VirtualMedium.ControllerID(rawValue: 1)
    let advertiserAddress = BDAddress(rawValue: 0x00_00_00_00_00_AA)

    override func setUp() {
        medium = VirtualMedium()
        advertiser = medium.add(VirtualController(address: advertiserAddress))
        scanner = medium.add(VirtualController(address: BDAddress(rawValue: 0x00_00_00_00_00_BB)))
        for id in [advertiser, scanner] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask(rawValue: 0x000F_FFFF_FFFF)), from: id, now: .zero)
        }
    }

    /// The status of the Command Complete or Command Status `command` got.
    @discardableResult
    func run(_ command: HCICommand, on id: VirtualMedium.ControllerID, at now: Duration = .zero) -> HCIStatus? {
        for d in medium.receive(command, from: id, now: now) where d.to == id {
            switch d.packet {
            case let .event(.commandComplete(_, _, parameters)): return parameters.first.map { HCIStatus($0) }
            case let .event(.commandStatus(status, _, _)): return status
            default: continue
            }
        }
        return nil
    }

    /// Every LE Meta subevent `id`'s host receives up to `time`, with when it arrived.
    func events(for id: VirtualMedium.ControllerID, until time: Duration, step: Duration = .microseconds(50)) -> [(Duration, LEMetaEvent)] {
        var out: [(Duration, LEMetaEvent)] = []
        var now = Duration.zero
        while now <= time {
            for d in medium.advance(to: now) where d.to == id {
                if case let .event(.le(e)) = d.packet { out.append((now, e)) }
            }
            guard let next = medium.nextDeadline, next <= time else { break }
            now = max(now + step, next)
        }
        return out
    }

    func startSet(handle: UInt8 = 1, properties: AdvertisingEventProperties = [], data: [UInt8], primary: LEPHY = .le1M,
                  secondary: LEPHY = .le1M, enable: AdvertisingSetEnable? = nil, periodic: [UInt8]? = nil) throws {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(
            handle: handle, properties: properties, primaryPHY: primary, secondaryPHY: secondary, sid: 3)), on: advertiser), .success)
        for fragment in AdvertisingDataFragment.fragments(of: data, limit: AdvertisingDataFragment.extendedLimit) {
            XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: handle, fragment), on: advertiser), .success)
        }
        if let periodic {
            XCTAssertEqual(run(.leSetPeriodicAdvertisingParameters(handle: handle, intervalMin: 80, intervalMax: 80), on: advertiser), .success)
            for fragment in AdvertisingDataFragment.fragments(of: periodic, limit: AdvertisingDataFragment.periodicLimit) {
                XCTAssertEqual(run(.leSetPeriodicAdvertisingData(handle: handle, fragment), on: advertiser), .success)
            }
            XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: handle), on: advertiser), .success)
        }
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [enable ?? AdvertisingSetEnable(handle: handle)]), on: advertiser), .success)
    }

    func scan(phys: LEPHYSet = .le1M, duration: UInt16 = 0) {
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: phys.contains(.le1M) ? ExtendedScanPHYParameters(type: .passive) : nil,
                                                        leCoded: phys.contains(.leCoded) ? ExtendedScanPHYParameters(type: .passive) : nil), on: scanner), .success)
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: true, duration: duration), on: scanner), .success)
    }

    func testACommandOfTheOtherSetIsDisallowedUntilReset() {
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: ExtendedScanPHYParameters(type: .active)), on: scanner), .success)
        XCTAssertEqual(run(.leSetScanParameters(type: .active, interval: 0x60, window: 0x30), on: scanner), .commandDisallowed)
        XCTAssertEqual(run(.reset, on: scanner), .success)
        XCTAssertEqual(run(.leSetScanParameters(type: .active, interval: 0x60, window: 0x30), on: scanner), .success)
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: ExtendedScanPHYParameters(type: .active)), on: scanner), .commandDisallowed)
        // A Bluetooth 4 controller has no extended commands at all.
        var old = VirtualControllerConfiguration()
        old.extendedAdvertising = nil
        let legacy = medium.add(VirtualController(address: BDAddress(rawValue: 0xCC), configuration: old))
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: ExtendedScanPHYParameters(type: .active)), on: legacy), .unknownCommand)
        XCTAssertEqual(run(.leReadNumberOfSupportedAdvertisingSets, on: legacy), .unknownCommand)
    }

    /// 600 octets: three reports of 229, 229 and 142, "more to come" but the last; all of them
    /// after the ADV_EXT_IND and the three auxiliary PDUs have gone over the air.
    func testReportsAreCutAt229OctetsAndArriveWhenTheChainHasGoneOverTheAir() throws {
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        try startSet(data: data)
        scan()
        let reports = events(for: scanner, until: .milliseconds(20)).compactMap { (t, e) -> (Duration, LEAdvertisingReport)? in
            guard case let .extendedAdvertisingReport(r) = e, let first = r.first else { return nil }
            return (t, first)
        }.prefix(3)
        XCTAssertEqual(reports.map(\.1.data.count), [229, 229, 142])
        XCTAssertEqual(reports.map(\.1.properties.dataStatus), [.incompleteMoreToCome, .incompleteMoreToCome, .complete])
        XCTAssertEqual(reports.flatMap(\.1.data), data)
        XCTAssertEqual(reports.first?.1.advertisingSID, 3)
        let header = VirtualMedium.auxAdvertisingHeader(try XCTUnwrap(medium.controller(advertiser)?.advertisement(ofSet: 1)))
        let payloads = AirTime.auxPayloads(dataCount: 600, firstHeader: header)
        XCTAssertEqual(payloads.count, 3)
        let air = AirTime.extendedAdvertisingEvent(primary: .le1M, secondary: .le1M, auxPayloads: payloads)
        XCTAssertEqual(reports.first?.0, air, "the first event went out at 0")
    }

    /// LE Coded S=8 carries 8 µs a bit: each octet 64 µs, eight times LE 1M's.
    func testTheCodedPHYTakesEightMicrosecondsABit() {
        XCTAssertEqual(AirTime.packet(payload: 11, phy: .leCoded) - AirTime.packet(payload: 10, phy: .leCoded), .microseconds(64))
        XCTAssertEqual(AirTime.packet(payload: 11, phy: .le1M) - AirTime.packet(payload: 10, phy: .le1M), .microseconds(8))
        // ADV_EXT_IND (7 octets): 376 µs of preamble, access address, CI and TERM1,
        // (2 + 7 + 3) × 64 µs, 24 µs TERM2.
        XCTAssertEqual(AirTime.packet(payload: AirTime.advExtIndPayload, phy: .leCoded), .microseconds(376 + 12 * 64 + 24))
        // The longest encrypted data PDU on LE Coded takes 17,040 µs (Vol 6 Part B §4.5.10).
        XCTAssertEqual(AirTime.packet(payload: 251, phy: .leCoded, encrypted: true), .microseconds(17_040))
    }

    /// A connectable set's data must fit one AUX_ADV_IND: 255 − (1 + 1 + AdvA 6 + ADI 2) = 245.
    func testConnectableDataLongerThanOneAuxAdvIndIsRefused() {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: .connectable)), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [UInt8](repeating: 1, count: 246))), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser), .packetTooLong)
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [UInt8](repeating: 1, count: 245))), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser), .success)
        // Fragments while it advertises are refused; data over the maximum too.
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .first, bytes: [1])), on: advertiser), .commandDisallowed)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: false, sets: []), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 2, properties: [])), on: advertiser), .success)
        for fragment in AdvertisingDataFragment.fragments(of: [UInt8](repeating: 2, count: 1651), limit: 251).dropLast() {
            XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 2, fragment), on: advertiser), .success)
        }
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 2, AdvertisingDataFragment(operation: .last, bytes: [UInt8](repeating: 2, count: 145))), on: advertiser),
                       .memoryCapacityExceeded)
    }

    func testAnExtendedScanWithADurationEndsWithScanTimeout() throws {
        scan(duration: 50) // 500 ms
        let timeouts = events(for: scanner, until: .seconds(1)).filter { if case .scanTimeout = $0.1 { return true } else { return false } }
        XCTAssertEqual(timeouts.map(\.0), [.milliseconds(500)])
        XCTAssertEqual(medium.controller(scanner)?.isScanning, false)
    }

    func testASetWithAnEventLimitEndsWithLimitReached() throws {
        try startSet(data: [2, 1, 6], enable: AdvertisingSetEnable(handle: 1, maxEvents: 3))
        let ended = events(for: advertiser, until: .seconds(1)).compactMap { (_, e) -> LEAdvertisingSetTerminated? in
            if case let .advertisingSetTerminated(t) = e { return t } else { return nil }
        }
        XCTAssertEqual(ended.map(\.status), [.limitReached])
        XCTAssertEqual(ended.first?.completedEvents, 3)
    }

    /// A sync needs the scanner to hear the set's SyncInfo; once made it needs no scanning, and
    /// it is lost Sync_Timeout after the train stops.
    func testASyncIsMadeFromTheSyncInfoAndLostAfterTheTrainStops() throws {
        let train = [UInt8](repeating: 7, count: 300)
        try startSet(data: [2, 1, 6], periodic: train)
        let request = HCICommand.lePeriodicAdvertisingCreateSync(sid: 3, advertiser: DeviceAddress(advertiserAddress, type: .public), syncTimeout: 100)
        XCTAssertEqual(run(request, on: scanner), .success)
        XCTAssertTrue(events(for: scanner, until: .milliseconds(300)).isEmpty, "no sync without scanning")
        scan()
        var seen = events(for: scanner, until: .milliseconds(600))
        let established = seen.compactMap { (_, e) -> LEPeriodicSyncEstablished? in
            if case let .periodicAdvertisingSyncEstablished(s) = e { return s } else { return nil }
        }
        XCTAssertEqual(established.map(\.status), [.success])
        XCTAssertEqual(established.first?.interval, 80)
        let reports = seen.compactMap { (_, e) -> LEPeriodicAdvertisingReport? in
            if case let .periodicAdvertisingReport(r) = e { return r } else { return nil }
        }
        XCTAssertEqual(reports.prefix(2).map(\.data.count), [247, 53])
        XCTAssertEqual(reports.prefix(2).map(\.dataStatus), [.incompleteMoreToCome, .complete])
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: false), on: scanner, at: .milliseconds(600)), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: false, handle: 1), on: advertiser, at: .milliseconds(600)), .success)
        seen = events(for: scanner, until: .seconds(3))
        let lost = seen.compactMap { (t, e) -> Duration? in
            if case .periodicAdvertisingSyncLost = e { return t } else { return nil }
        }
        XCTAssertEqual(lost.count, 1)
        // The last AUX_SYNC_IND went out at 600 ms (the train every 100 ms, stopped after the
        // event at 600 ms); the sync is lost its 1 s timeout later.
        XCTAssertEqual(lost.first, .milliseconds(1600))
    }

    func testCreateSyncCancelEndsTheAttemptWithOperationCancelled() {
        let request = HCICommand.lePeriodicAdvertisingCreateSync(sid: 3, advertiser: DeviceAddress(advertiserAddress, type: .public), syncTimeout: 100)
        XCTAssertEqual(run(request, on: scanner), .success)
        XCTAssertEqual(run(request, on: scanner), .commandDisallowed, "one Create Sync at a time")
        var established: [LEPeriodicSyncEstablished] = []
        for d in medium.receive(.lePeriodicAdvertisingCreateSyncCancel, from: scanner, now: .zero) {
            if case let .event(.le(.periodicAdvertisingSyncEstablished(s))) = d.packet { established.append(s) }
        }
        XCTAssertEqual(established.map(\.status), [.operationCancelledByHost])
        XCTAssertEqual(run(.lePeriodicAdvertisingCreateSyncCancel, on: scanner), .commandDisallowed)
    }

    /// Reports still on the air when the scanner's host resets it never reach that host.
    func testAResetDropsTheReportsOnTheirWayToTheHost() throws {
        try startSet(data: [UInt8](repeating: 1, count: 600))
        scan()
        _ = medium.advance(to: .zero) // the event goes out; its reports are due 6.268 ms later
        XCTAssertEqual(run(.reset, on: scanner, at: .milliseconds(1)), .success)
        let reports = events(for: scanner, until: .milliseconds(20)).filter {
            if case .extendedAdvertisingReport = $0.1 { return true } else { return false }
        }
        XCTAssertTrue(reports.isEmpty)
    }

    /// Enabling a running set again starts its duration again (§7.8.56).
    func testASetEnabledAgainStartsItsDurationAgain() throws {
        try startSet(data: [2, 1, 6], enable: AdvertisingSetEnable(handle: 1, duration: 50))
        _ = events(for: advertiser, until: .milliseconds(300))
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1, duration: 50)]),
                           on: advertiser, at: .milliseconds(300)), .success)
        let ended = events(for: advertiser, until: .seconds(2)).compactMap { (t, e) -> Duration? in
            if case .advertisingSetTerminated = e { return t } else { return nil }
        }
        XCTAssertEqual(ended.count, 1)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(ended.first), .milliseconds(800))
    }

    /// A sync is made only by an extended scan that hears the set's primary PHY.
    func testASyncNeedsAScanOnTheSetsPrimaryPHY() throws {
        try startSet(data: [2, 1, 6], periodic: [1, 2, 3])
        XCTAssertEqual(run(.lePeriodicAdvertisingCreateSync(sid: 3, advertiser: DeviceAddress(advertiserAddress, type: .public), syncTimeout: 100),
                           on: scanner), .success)
        scan(phys: .leCoded)
        let established = events(for: scanner, until: .milliseconds(500)).filter {
            if case .periodicAdvertisingSyncEstablished = $0.1 { return true } else { return false }
        }
        XCTAssertTrue(established.isEmpty)
    }

    /// A set holding more than 31 octets cannot be switched to legacy PDUs (§7.8.53).
    func testASetWithLongDataCannotBecomeLegacy() throws {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [UInt8](repeating: 1, count: 40))),
                           on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [.legacy])), on: advertiser),
                       .invalidHCICommandParameters)
    }

    /// With a Scan_Period the scan listens Scan_Duration at the start of each period and gives
    /// no LE Scan Timeout; a period not longer than the duration is refused (§7.8.65).
    func testAScanWithAPeriodListensForItsDurationEachPeriod() throws {
        try startSet(data: [2, 1, 6])
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: ExtendedScanPHYParameters(type: .passive)), on: scanner), .success)
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: true, duration: 200, period: 1), on: scanner), .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: true, duration: 20, period: 1), on: scanner), .success) // 200 ms every 1.28 s
        let seen = events(for: scanner, until: .seconds(4))
        XCTAssertFalse(seen.contains { if case .scanTimeout = $0.1 { return true } else { return false } })
        let times = seen.compactMap { (t, e) -> Duration? in if case .extendedAdvertisingReport = e { return t } else { return nil } }
        XCTAssertFalse(times.isEmpty)
        for t in times {
            let into = (t.components.seconds * 1_000_000 + t.components.attoseconds / 1_000_000_000_000) % 1_280_000
            XCTAssertLessThan(into, 201_000, "heard \(t), outside the first 200 ms of its period")
        }
        XCTAssertEqual(medium.controller(scanner)?.isScanning, true)
    }

    // MARK: The second review's findings

    func createSync(sid: UInt8 = 3, timeout: UInt16 = 100) {
        XCTAssertEqual(run(.lePeriodicAdvertisingCreateSync(sid: sid, advertiser: DeviceAddress(advertiserAddress, type: .public), syncTimeout: timeout),
                           on: scanner), .success)
    }

    func lostTimes(_ seen: [(Duration, LEMetaEvent)]) -> [Duration] {
        seen.compactMap { (t, e) in if case .periodicAdvertisingSyncLost = e { return t } else { return nil } }
    }

    /// A sync follows one train: after the advertiser resets and starts another train on a set
    /// with the same handle, the old sync is lost at its timeout and gets none of the new data.
    func testASyncIsLostWhenItsTrainIsReplacedByAnotherOnTheSameSet() throws {
        try startSet(data: [2, 1, 6], periodic: [1, 2, 3])
        createSync()
        scan()
        let first = events(for: scanner, until: .milliseconds(300))
        XCTAssertTrue(first.contains { if case .periodicAdvertisingSyncEstablished = $0.1 { return true } else { return false } })
        XCTAssertEqual(run(.reset, on: advertiser, at: .milliseconds(300)), .success)
        _ = medium.receive(.setEventMask(EventMask.default), from: advertiser, now: .milliseconds(300))
        _ = medium.receive(.leSetEventMask(LEEventMask(rawValue: 0x000F_FFFF_FFFF)), from: advertiser, now: .milliseconds(300))
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [], sid: 7)),
                           on: advertiser, at: .milliseconds(300)), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingParameters(handle: 1, intervalMin: 80, intervalMax: 80), on: advertiser, at: .milliseconds(300)), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [9, 9])),
                           on: advertiser, at: .milliseconds(300)), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: 1), on: advertiser, at: .milliseconds(300)), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser,
                           at: .milliseconds(300)), .success)
        let later = events(for: scanner, until: .seconds(2))
        XCTAssertEqual(lostTimes(later).count, 1, "the old sync is lost")
        XCTAssertFalse(later.contains { if case let .periodicAdvertisingReport(r) = $0.1 { return r.data == [9, 9] } else { return false } })
    }

    /// Sync Established follows the first AUX_SYNC_IND, after the extended report that carried
    /// the SyncInfo (§7.7.65.14).
    func testASyncIsEstablishedAtTheTrainsFirstEventAfterItsSyncInfo() throws {
        try startSet(data: [2, 1, 6], periodic: [1, 2, 3])
        createSync()
        scan()
        let seen = events(for: scanner, until: .milliseconds(300))
        let report = try XCTUnwrap(seen.firstIndex { if case .extendedAdvertisingReport = $0.1 { return true } else { return false } })
        let established = try XCTUnwrap(seen.firstIndex { if case .periodicAdvertisingSyncEstablished = $0.1 { return true } else { return false } })
        XCTAssertLessThan(report, established)
        XCTAssertGreaterThan(seen[established].0, seen[report].0)
    }

    /// After LE Periodic Advertising Terminate Sync, no report of that sync still on the air
    /// reaches the host.
    func testNoReportOfATerminatedSyncArrivesAfterTheTerminate() throws {
        try startSet(data: [2, 1, 6], periodic: [UInt8](repeating: 4, count: 600))
        createSync()
        scan()
        var seen = events(for: scanner, until: .milliseconds(300), step: .microseconds(100))
        let sync = try XCTUnwrap(seen.compactMap { (_, e) -> UInt16? in
            if case let .periodicAdvertisingSyncEstablished(s) = e { return s.syncHandle } else { return nil }
        }.first)
        // Trains every 100 ms: the one at 400 ms is on the air for about 6 ms.
        _ = events(for: scanner, until: .milliseconds(401))
        XCTAssertEqual(run(.lePeriodicAdvertisingTerminateSync(syncHandle: sync), on: scanner, at: .milliseconds(401)), .success)
        seen = events(for: scanner, until: .milliseconds(450))
        XCTAssertFalse(seen.contains { if case let .periodicAdvertisingReport(r) = $0.1 { return r.syncHandle == sync } else { return false } })
    }

    func testHighDutyCycleDirectedAdvertisingMustSayHowLongUpTo1280Milliseconds() {
        let directed = ExtendedAdvertisingParameters(handle: 1, properties: AdvertisingEventProperties(rawValue: 0x1D),
                                                     peer: DeviceAddress(BDAddress(rawValue: 0xBB), type: .public))
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(directed), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser),
                       .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1, duration: 129)]), on: advertiser),
                       .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1, duration: 128)]), on: advertiser),
                       .success)
    }

    func testAnAnonymousSetIsReportedWithoutItsAddress() throws {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: .anonymous)), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [2, 1, 6])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser), .success)
        scan()
        let report = try XCTUnwrap(events(for: scanner, until: .milliseconds(10)).compactMap { (_, e) -> LEAdvertisingReport? in
            if case let .extendedAdvertisingReport(r) = e { return r.first } else { return nil }
        }.first)
        XCTAssertTrue(report.isAnonymous)
        XCTAssertEqual(report.address.address, .zero)
    }

    /// A set's duration ends it when it runs out, not at its next event; so does its last
    /// allowed event (§7.8.56).
    func testDurationAndEventLimitsEndASetWhenTheyRunOut() throws {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [], intervalMin: 1600, intervalMax: 1600)),
                           on: advertiser), .success) // 1 s
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1, duration: 10)]), on: advertiser), .success)
        let ended = events(for: advertiser, until: .seconds(3)).compactMap { (t, e) -> Duration? in
            if case .advertisingSetTerminated = e { return t } else { return nil }
        }
        XCTAssertEqual(ended, [.milliseconds(100)])
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1, maxEvents: 1)]),
                           on: advertiser, at: .seconds(3)), .success)
        var now = Duration.seconds(3)
        var limit: [Duration] = []
        while now <= .seconds(6), limit.isEmpty {
            for d in medium.advance(to: now) where d.to == advertiser {
                if case .event(.le(.advertisingSetTerminated)) = d.packet { limit.append(now) }
            }
            now += .milliseconds(1)
        }
        XCTAssertEqual(limit, [.seconds(3)], "ended with its one event, not a second later")
    }

    func testSmallerRulesOfTheAdvertisingAndSyncCommands() {
        // The Periodic Advertiser List cannot change while any Create Sync is pending (§7.8.70).
        createSync()
        XCTAssertEqual(run(.leAddDeviceToPeriodicAdvertiserList(DeviceAddress(advertiserAddress, type: .public), sid: 1), on: scanner), .commandDisallowed)
        XCTAssertEqual(run(.leClearPeriodicAdvertiserList, on: scanner), .commandDisallowed)
        // A disable ignores Filter_Duplicates, Duration and Period (§7.8.65).
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: false, filterDuplicates: 9, duration: 500, period: 1), on: scanner), .success)
        // A periodic set stays non-connectable; a set with data cannot become scannable (§7.8.53).
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingParameters(handle: 1, intervalMin: 80, intervalMax: 80), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: 1), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: .connectable)), on: advertiser),
                       .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 2, properties: [])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingData(handle: 2, AdvertisingDataFragment(operation: .complete, bytes: [2, 1, 6])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 2, properties: .scannable)), on: advertiser),
                       .invalidHCICommandParameters)
    }

    /// Two Bluetooth 5 controllers connecting with the legacy commands agree on Channel
    /// Selection Algorithm #2 through the ChSel bits (Vol 6 Part B §2.3.3.1).
    func testLegacyCommandsBetweenTwoBluetooth5ControllersUseChannelSelectionAlgorithm2() {
        XCTAssertEqual(run(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), on: advertiser), .success)
        XCTAssertEqual(run(.leSetAdvertisingEnable(enable: true), on: advertiser), .success)
        XCTAssertEqual(run(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(advertiserAddress, type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400),
                           on: scanner), .success)
        let algorithms = medium.advance(to: .zero).compactMap { d -> UInt8? in
            if case let .event(.le(.channelSelectionAlgorithm(_, algorithm))) = d.packet { return algorithm } else { return nil }
        }
        XCTAssertEqual(algorithms, [1, 1])
    }

    // MARK: The third review's findings

    /// A Create Sync that heard a train's SyncInfo, whose train then stopped before its next
    /// event, takes the SyncInfo of the train that replaces it.
    func testACreateSyncFollowsTheSyncInfoOfATrainThatReplacedTheOneItHeard() throws {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [], sid: 3)), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingParameters(handle: 1, intervalMin: 800, intervalMax: 800), on: advertiser), .success) // 1 s
        XCTAssertEqual(run(.leSetPeriodicAdvertisingData(handle: 1, AdvertisingDataFragment(operation: .complete, bytes: [1])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: 1), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 1)]), on: advertiser), .success)
        createSync()
        scan()
        _ = events(for: scanner, until: .milliseconds(10)) // the SyncInfo of train 1 heard; its next event is at 1 s
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: false, handle: 1), on: advertiser, at: .milliseconds(10)), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: 1), on: advertiser, at: .milliseconds(20)), .success)
        let seen = events(for: scanner, until: .seconds(2))
        XCTAssertTrue(seen.contains { if case let .periodicAdvertisingSyncEstablished(s) = $0.1 { return s.status == .success } else { return false } })
    }

    /// §7.8.65: the Period is ignored without a Duration; Filter_Duplicates 2 needs both.
    func testAScanPeriodWithoutADurationIsIgnoredAndResetEachPeriodNeedsBoth() {
        XCTAssertEqual(run(.leSetExtendedScanParameters(le1M: ExtendedScanPHYParameters(type: .passive)), on: scanner), .success)
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: true, filterDuplicates: 2, duration: 10, period: 0), on: scanner), .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetExtendedScanEnable(enable: true, duration: 0, period: 4), on: scanner), .success)
        XCTAssertNil(medium.controller(scanner)?.scanPeriod)
    }

    /// LE Set PHY asking for LE Coded of a controller without it is refused (§7.8.49); one with
    /// it takes the link there.
    func testSetPHYToLECodedNeedsAControllerWithIt() throws {
        var old = VirtualControllerConfiguration()
        old.extendedAdvertising = ExtendedAdvertisingSupport(codedPHY: false)
        let noCoded = medium.add(VirtualController(address: BDAddress(rawValue: 0xCC), configuration: old))
        for id in [noCoded] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask(rawValue: 0x000F_FFFF_FFFF)), from: id, now: .zero)
        }
        XCTAssertEqual(run(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), on: advertiser), .success)
        XCTAssertEqual(run(.leSetAdvertisingEnable(enable: true), on: advertiser), .success)
        XCTAssertEqual(run(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(advertiserAddress, type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400),
                           on: noCoded), .success)
        let handle = try XCTUnwrap(medium.advance(to: .zero).compactMap { d -> UInt16? in
            guard d.to == noCoded, case let .event(.le(.connectionComplete(c))) = d.packet else { return nil }
            return c.handle
        }.first)
        XCTAssertEqual(run(.leSetPHY(handle: handle, tx: [.le2M, .leCoded], rx: [.le1M, .leCoded]), on: noCoded),
                       .unsupportedFeatureOrParameterValue)
        XCTAssertEqual(run(.leSetDefaultPHY(tx: .leCoded, rx: nil), on: noCoded), .unsupportedFeatureOrParameterValue)
        // Two controllers with LE Coded: the link goes there.
        let peripheralHandle = try XCTUnwrap(medium.controller(advertiser)?.connections.keys.first)
        var updated: [LEPHY] = []
        for d in medium.receive(.leSetPHY(handle: peripheralHandle, tx: .leCoded, rx: .leCoded), from: advertiser, now: .milliseconds(1)) {
            if case let .event(.le(.phyUpdateComplete(status, _, tx, _))) = d.packet, status.isSuccess { updated.append(tx) }
        }
        XCTAssertEqual(updated, [.le1M], "the peer has no LE Coded: the link stays")
        let second = medium.add(VirtualController(address: BDAddress(rawValue: 0xDD)))
        _ = medium.receive(.setEventMask(EventMask.default), from: second, now: .zero)
        _ = medium.receive(.leSetEventMask(LEEventMask(rawValue: 0x000F_FFFF_FFFF)), from: second, now: .zero)
        XCTAssertEqual(run(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), on: scanner), .success)
        XCTAssertEqual(run(.leSetAdvertisingEnable(enable: true), on: scanner), .success)
        XCTAssertEqual(run(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(BDAddress(rawValue: 0xBB), type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400),
                           on: second, at: .milliseconds(2)), .success)
        _ = medium.advance(to: .milliseconds(2))
        let codedHandle = try XCTUnwrap(medium.controller(second)?.connections.keys.first)
        XCTAssertEqual(run(.leSetPHY(handle: codedHandle, tx: .leCoded, rx: .leCoded), on: second, at: .milliseconds(3)), .success)
        XCTAssertEqual(medium.controller(second)?.connections[codedHandle]?.phy, .leCoded)
    }

    /// Only enabled periodic advertising keeps a set non-connectable (§7.8.53).
    func testASetWhosePeriodicAdvertisingIsOffMayBecomeConnectable() {
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: [])), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingParameters(handle: 1, intervalMin: 80, intervalMax: 80), on: advertiser), .success)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: true, handle: 1), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: .connectable)), on: advertiser),
                       .invalidHCICommandParameters)
        XCTAssertEqual(run(.leSetPeriodicAdvertisingEnable(enable: false, handle: 1), on: advertiser), .success)
        XCTAssertEqual(run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, properties: .connectable)), on: advertiser), .success)
    }
}
