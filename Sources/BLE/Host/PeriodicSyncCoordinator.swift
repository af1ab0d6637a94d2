import BLEHCI
import BLEHost
import BLERuntime
import BLEWire

/// One periodic advertising report put back together: the whole data of one periodic
/// advertising event (its AUX_SYNC_IND and AUX_CHAIN_INDs, Vol 6 Part B §4.4.2.12).
public struct PeriodicAdvertisement: Sendable, Hashable {
    /// The data as received.
    public let bytes: [UInt8]
    /// The data's AD structures.
    public var data: AdvertisingData { AdvertisingData(bytes: bytes) }
    /// Signal strength in dBm, nil when the controller did not give it.
    public let rssi: Int8?
    /// The advertiser's TX power in dBm, nil when not given.
    public let txPower: Int8?
    /// The controller could not receive the rest of the data (Data_Status 2, §7.7.65.15):
    /// `bytes` is only its start.
    public let truncated: Bool
}

/// Periodic advertising sync (Core spec Vol 4 Part E §7.8.67–§7.8.69, events §7.7.65.14–16):
/// one sync being created at a time (the controller takes one pending Create Sync), each sync's
/// reports reassembled and handed to its stream, which ends with `.periodicSyncLost` when the
/// train is lost. Isolated to the host actor, known to it as a `PeriodicSyncDriver`.
final class PeriodicSyncCoordinator {
    /// What a sync's stream is fed from.
    struct Sync {
        /// Tells this sync from a later one the controller gives the same handle.
        let id: UInt64
        let advertiser: DeviceAddress
        let sid: UInt8
        let continuation: AsyncThrowingStream<PeriodicAdvertisement, Error>.Continuation
    }

    private var syncs: [UInt16: Sync] = [:]
    /// Each sync's chain of reports under way, by sync handle (the extended reports' assembler,
    /// §7.7.65.15 chains as §7.7.65.13's do).
    private var assembler = ExtendedReportAssembler<UInt16>()
    /// The Create Sync waiting for its Sync Established: the id of its attempt, what it asked
    /// for, the stream a made sync feeds, and why it was cancelled (nil: not cancelled).
    private struct Creation {
        let id: UInt64
        /// The advertiser asked for (the first, from a list), for messages.
        let advertiser: DeviceAddress
        let sid: UInt8
        /// The SIDs a Sync Established of this attempt can carry.
        let sids: Set<UInt8>
        let stream: AsyncThrowingStream<PeriodicAdvertisement, Error>.Continuation
        let continuation: CheckedContinuation<(LEPeriodicSyncEstablished, UInt64), Error>
        var cancelledFor: Error?
        /// Create Sync went to the controller (a cancel before then fails the attempt here).
        var sent = false
    }
    /// Cancels given up on by the backstop: their Sync Established (Operation Cancelled by
    /// Host) may still come, and is not the next attempt's.
    private var lateCancelEvents = 0
    private var creating: Creation?
    /// A creation's Periodic Advertiser List is being written: others are busy meanwhile.
    private var preparingList = false
    private var nextID: UInt64 = 1
    private var nextSyncID: UInt64 = 1

    /// A new sync's record, with an id of its own.
    private func register(_ handle: UInt16, advertiser: DeviceAddress, sid: UInt8,
                          _ continuation: AsyncThrowingStream<PeriodicAdvertisement, Error>.Continuation) -> UInt64 {
        let id = nextSyncID
        nextSyncID += 1
        syncs[handle] = Sync(id: id, advertiser: advertiser, sid: sid, continuation: continuation)
        return id
    }

    /// How long after a successful Create Sync Cancel its Sync Established (Operation Cancelled
    /// by Host) may take before the attempt is given up anyway.
    static let cancelBackstop: Duration = .seconds(2)

    /// Whether a Create Sync is waiting for its answer.
    var isCreating: Bool { creating != nil }

    /// Sends LE Periodic Advertising Create Sync and waits for Sync Established (the controller
    /// must be scanning to hear the set's AUX_ADV_IND and its SyncInfo). After `timeout` the
    /// attempt is cancelled (Create Sync Cancel) and fails with `.timeout`; `cancel` does the same
    /// for the caller's cancellation. The sync feeds `stream` from its Sync Established on.
    func create(_ advertisers: [(address: DeviceAddress, sid: UInt8)], skip: UInt16, syncTimeout: UInt16, timeout: Duration,
                stream: AsyncThrowingStream<PeriodicAdvertisement, Error>.Continuation,
                _ host: isolated some PeriodicSyncDriver) async throws -> (LEPeriodicSyncEstablished, UInt64) {
        guard creating == nil, !preparingList else { throw BLEError.busy("another periodic sync is being created") }
        guard let first = advertisers.first else { throw BLEError.invalidArgument("no advertiser to sync to") }
        let (advertiser, sid) = first
        let options: PeriodicSyncOptions = advertisers.count > 1 ? .useAdvertiserList : []
        if advertisers.count > 1 {
            // Any of several: the Periodic Advertiser List (§7.8.70–§7.8.72) holds them, and
            // Create Sync takes the first of them heard.
            preparingList = true
            defer { preparingList = false }
            try await host.commandReturning(.leClearPeriodicAdvertiserList)
            for entry in advertisers { try await host.commandReturning(.leAddDeviceToPeriodicAdvertiserList(entry.address, sid: entry.sid)) }
        }
        let sids = Set(advertisers.map(\.sid))
        try Task.checkCancellation()
        let id = nextID
        nextID += 1
        // The caller's cancellation cancels this attempt, and no other.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { continuation in
                creating = Creation(id: id, advertiser: advertiser, sid: sid, sids: sids, stream: stream, continuation: continuation)
                host.spawn("periodic sync \(id)") {
                    await host.run { host in
                        // Cancelled before it went out: it never does.
                        guard let pending = host.periodicSyncs.creating, pending.id == id, pending.cancelledFor == nil else { return }
                        host.periodicSyncs.creating?.sent = true
                        do {
                            try await host.command(.lePeriodicAdvertisingCreateSync(options: options, sid: sid, advertiser: advertiser,
                                                                                    skip: skip, syncTimeout: syncTimeout))
                        } catch {
                            host.periodicSyncs.resumeCreating(id, .failure(error))
                        }
                    }
                    try await host.clock.sleep(for: timeout)
                    await host.run { await $0.periodicSyncs.cancel(id, for: BLEError.timeout("no periodic advertising from \(advertiser) SID \(sid)"), $0) }
                }
            }
        } onCancel: {
            Task { await host.run { await $0.periodicSyncs.cancel(id, for: CancellationError(), $0) } }
        }
    }

    /// LE Periodic Advertising Create Sync Cancel for attempt `id`, which then fails with
    /// `error`: at its Sync Established (Operation Cancelled by Host), at once when the cancel is
    /// refused, or after `cancelBackstop` when that event never comes.
    private func cancel(_ id: UInt64, for error: Error, _ host: isolated some PeriodicSyncDriver) async {
        guard creating?.id == id, creating?.cancelledFor == nil else { return }
        creating?.cancelledFor = error
        guard creating?.sent == true else {
            resumeCreating(id, .failure(error))
            return
        }
        do {
            try await host.commandReturning(.lePeriodicAdvertisingCreateSyncCancel)
        } catch {
            host.log("LE Periodic Advertising Create Sync Cancel: \(error)")
            resumeCreating(id, .failure(creating?.cancelledFor ?? error))
            return
        }
        host.spawn("periodic sync \(id) cancel") {
            try await host.clock.sleep(for: Self.cancelBackstop)
            await host.run { host in
                guard let pending = host.periodicSyncs.creating, pending.id == id else { return }
                host.periodicSyncs.lateCancelEvents += 1
                host.periodicSyncs.resumeCreating(id, .failure(pending.cancelledFor ?? BLEError.timeout("periodic sync")))
            }
        }
    }

    private func resumeCreating(_ id: UInt64, _ result: Result<(LEPeriodicSyncEstablished, UInt64), Error>) {
        guard let pending = creating, pending.id == id else { return }
        creating = nil
        pending.continuation.resume(with: result)
    }

    /// LE Periodic Advertising Sync Established (§7.7.65.14). A made sync is entered before the
    /// creator resumes, so reports and a loss in the same burst of events reach its stream; one
    /// for another set (a late answer to an attempt given up) is ended on the controller.
    func established(_ event: LEPeriodicSyncEstablished, _ host: isolated some PeriodicSyncDriver) {
        // A cancel the backstop gave up on, answered at last: not the pending attempt's end.
        if event.status == HCIStatus(0x44), lateCancelEvents > 0, creating?.cancelledFor == nil {
            lateCancelEvents -= 1
            return
        }
        guard let pending = creating, !event.status.isSuccess || pending.sids.contains(event.sid) else {
            if event.status.isSuccess {
                host.spawn("stray periodic sync") {
                    await host.run { host in
                        do { try await host.commandReturning(.lePeriodicAdvertisingTerminateSync(syncHandle: event.syncHandle)) } catch {
                            host.log("LE Periodic Advertising Terminate Sync of a sync nobody waits for: \(error)")
                        }
                    }
                }
            }
            return
        }
        if event.status.isSuccess, let error = pending.cancelledFor {
            // Made as the cancel crossed it: the caller has given up, so the sync ends.
            resumeCreating(pending.id, .failure(error))
            host.spawn("periodic sync made too late") {
                await host.run { _ = try? await $0.commandReturning(.lePeriodicAdvertisingTerminateSync(syncHandle: event.syncHandle)) }
            }
        } else if event.status.isSuccess {
            let syncID = register(event.syncHandle, advertiser: event.advertiser, sid: event.sid, pending.stream)
            resumeCreating(pending.id, .success((event, syncID)))
        } else if let error = pending.cancelledFor {
            resumeCreating(pending.id, .failure(error))
        } else {
            resumeCreating(pending.id, .failure(BLEError.hci(.commandFailed(opcode: .lePeriodicAdvertisingCreateSync, status: event.status))))
        }
    }

    /// LE Periodic Advertising Report (§7.7.65.15): fragments are joined until the last; a
    /// truncated chain (by the controller, or past 1,650 octets) is delivered as truncated.
    func report(_ report: LEPeriodicAdvertisingReport) {
        guard let sync = syncs[report.syncHandle],
              let whole = assembler.receive(report.syncHandle, status: report.dataStatus, data: report.data) else { return }
        sync.continuation.yield(PeriodicAdvertisement(
            bytes: whole.data, rssi: report.rssi == LEAdvertisingReport.unavailable ? nil : report.rssi,
            txPower: report.txPower == LEAdvertisingReport.unavailable ? nil : report.txPower, truncated: whole.truncated))
    }

    /// LE Periodic Advertising Sync Lost (§7.7.65.16): the stream ends with `.periodicSyncLost`.
    func lost(_ syncHandle: UInt16) {
        guard let sync = syncs.removeValue(forKey: syncHandle) else { return }
        assembler.forget(syncHandle)
        sync.continuation.finish(throwing: BLEError.periodicSyncLost("\(sync.advertiser) SID \(sync.sid)"))
    }

    /// Ends a sync on the controller (LE Periodic Advertising Terminate Sync, §7.8.69) and its
    /// stream, normally.
    func terminate(_ syncHandle: UInt16, id: UInt64, _ host: isolated some PeriodicSyncDriver) async {
        guard let sync = syncs[syncHandle], sync.id == id else { return }
        syncs[syncHandle] = nil
        assembler.forget(syncHandle)
        sync.continuation.finish()
        do { try await host.commandReturning(.lePeriodicAdvertisingTerminateSync(syncHandle: syncHandle)) } catch {
            host.log("LE Periodic Advertising Terminate Sync: \(error)")
        }
    }

    // MARK: Periodic Advertising Sync Transfer (Vol 4 Part E §7.8.89–§7.8.92, §7.7.65.24)

    /// What a transfer hands the peer: a sync of ours, or our own set's periodic advertising.
    enum TransferSource: Sendable {
        case sync(UInt16, id: UInt64)
        case advertisingSet(UInt8)
    }

    /// What the transfer listener is told: a sync a peer transferred (its stream already fed),
    /// or that no more will come (the controller failed, or another listener took over).
    enum TransferNews: Sendable {
        case received(LEPeriodicSyncTransferReceived, syncID: UInt64, peer: DeviceAddress?, stream: AsyncThrowingStream<PeriodicAdvertisement, Error>)
        case ended(BLEError?)
    }
    typealias TransferListener = @Sendable (TransferNews) -> Void
    private var transferListener: TransferListener?
    /// Numbers each `acceptTransfers` call's listener.
    private var transferListenerID: UInt64 = 0

    /// Hands the peer of link `linkID` a sync of ours (LE Periodic Advertising Sync Transfer,
    /// §7.8.89) or our set's periodic advertising (Set Info Transfer, §7.8.90). A peer without
    /// the recipient feature is the controller's error (Unsupported Remote Feature).
    func transfer(_ source: TransferSource, linkID: UInt64, serviceData: UInt16, _ host: isolated some PeriodicSyncDriver) async throws {
        if let failure = host.failure { throw failure }
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        let commands = host.info?.supportedCommands
        switch source {
        case let .sync(syncHandle, id):
            guard commands?.lePeriodicAdvertisingSyncTransfer == true else {
                throw BLEError.unsupported("the controller lists no LE Periodic Advertising Sync Transfer (Vol 4 Part E §7.8.89)")
            }
            guard syncs[syncHandle]?.id == id else { throw BLEError.invalidArgument("the periodic sync has ended") }
            try await host.commandReturning(.lePeriodicAdvertisingSyncTransfer(handle: handle, serviceData: serviceData, syncHandle: syncHandle))
        case let .advertisingSet(set):
            guard commands?.lePeriodicAdvertisingSetInfoTransfer == true else {
                throw BLEError.unsupported("the controller lists no LE Periodic Advertising Set Info Transfer (Vol 4 Part E §7.8.90)")
            }
            guard host.advertisingSets.records[set]?.periodic == true else {
                throw BLEError.invalidArgument("advertising set \(set) runs no periodic advertising")
            }
            try await host.commandReturning(.lePeriodicAdvertisingSetInfoTransfer(handle: handle, serviceData: serviceData, advertisingHandle: set))
        }
    }

    /// Accepts syncs peers transfer, from now on, on every link (LE Set Default Periodic
    /// Advertising Sync Transfer Parameters, §7.8.92, for links to come; §7.8.91 for each link
    /// up now), reports on; each reaches `listener`. One listener: a second call replaces it.
    /// Returns the listener's number, for `stopAcceptingTransfers`.
    @discardableResult
    func acceptTransfers(syncTimeout: UInt16, listener: @escaping TransferListener, _ host: isolated some PeriodicSyncDriver) async throws -> UInt64 {
        if let failure = host.failure { throw failure }
        guard let commands = host.info?.supportedCommands, commands.leSetDefaultPeriodicAdvertisingSyncTransferParameters,
              commands.leSetPeriodicAdvertisingSyncTransferParameters else {
            throw BLEError.unsupported("the controller cannot receive periodic sync transfers (Vol 4 Part E §7.8.91, §7.8.92)")
        }
        // Claimed before the commands: an earlier consumer that stops meanwhile no longer
        // turns transfers off under this one.
        transferListenerID &+= 1
        let id = transferListenerID
        try await host.commandReturning(.leSetDefaultPeriodicAdvertisingSyncTransferParameters(mode: .syncWithReports, syncTimeout: syncTimeout))
        for handle in host.linkHandles {
            try await host.commandReturning(.leSetPeriodicAdvertisingSyncTransferParameters(handle: handle, mode: .syncWithReports, syncTimeout: syncTimeout))
        }
        transferListener?(.ended(nil))
        transferListener = listener
        return id
    }

    /// The consumer of listener `id` stopped reading: transfers are refused from now on (Mode
    /// off, §7.8.91, §7.8.92), and any that still arrive are ended on the controller
    /// (`transferReceived`). Nothing when another listener took over since.
    func stopAcceptingTransfers(_ id: UInt64, _ host: isolated some PeriodicSyncDriver) async {
        guard transferListener != nil, transferListenerID == id, host.failure == nil else { return }
        // Mode off from here on (a stream dropped while its own commands were still out finds
        // the listener not yet in place and leaves the controller as it is).
        transferListener = nil
        do {
            try await host.commandReturning(.leSetDefaultPeriodicAdvertisingSyncTransferParameters(mode: .off, syncTimeout: 0x000A))
            for handle in host.linkHandles {
                try await host.commandReturning(.leSetPeriodicAdvertisingSyncTransferParameters(handle: handle, mode: .off, syncTimeout: 0x000A))
            }
        } catch {
            host.log("refusing periodic sync transfers: \(error)")
        }
    }

    /// LE Periodic Advertising Sync Transfer Received (§7.7.65.24): a sync the peer handed us,
    /// made already; its stream goes to the listener. With no listener (or after a failed
    /// transfer) nothing is kept, and a made sync is ended on the controller.
    func transferReceived(_ event: LEPeriodicSyncTransferReceived, _ host: isolated some PeriodicSyncDriver) {
        guard event.sync.status.isSuccess else {
            host.log("periodic sync transfer from link 0x\(String(event.connectionHandle, radix: 16)) failed: \(event.sync.status)")
            return
        }
        guard let listener = transferListener, syncs[event.sync.syncHandle] == nil else {
            host.spawn("unwanted periodic sync") {
                await host.run { _ = try? await $0.command(.lePeriodicAdvertisingTerminateSync(syncHandle: event.sync.syncHandle)) }
            }
            return
        }
        let (stream, continuation) = AsyncThrowingStream<PeriodicAdvertisement, Error>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let syncID = register(event.sync.syncHandle, advertiser: event.sync.advertiser, sid: event.sync.sid, continuation)
        listener(.received(event, syncID: syncID, peer: host.link(event.connectionHandle)?.peer, stream: stream))
    }

    /// The controller failed: every stream and the pending creation end with `error`.
    func fail(_ error: BLEError) {
        if let pending = creating {
            creating = nil
            pending.continuation.resume(throwing: error)
        }
        for sync in syncs.values { sync.continuation.finish(throwing: error) }
        syncs = [:]
        assembler.removeAll()
        transferListener?(.ended(error))
        transferListener = nil
    }
}

/// What periodic sync needs of the host: itself (its tasks reach it again), the clock its
/// creation's timeout runs on, the links (a transfer names one) and what the controller lists.
protocol PeriodicSyncDriver: LinkTableAccess {
    var periodicSyncs: PeriodicSyncCoordinator { get }
    nonisolated var clock: any BLEClock { get }
    var info: ControllerInfo? { get }
    var advertisingSets: AdvertisingSetCoordinator { get }
}
