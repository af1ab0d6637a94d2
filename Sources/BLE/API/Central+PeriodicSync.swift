import BLEHCI
import BLERuntime
import BLEWire
import Synchronization

/// A sync to one advertiser's periodic advertising (Core spec Vol 6 Part B §4.4.2.12, HCI Vol 4
/// Part E §7.8.67–§7.8.69): the reports of its train as an async sequence (one reader), which
/// ends when `terminate` is called or this object is released (normally), or with
/// `BLEError.periodicSyncLost` when the train is no longer heard.
public final class PeriodicSync: AsyncSequence, Sendable {
    /// Each periodic advertisement of the train, whole.
    public typealias Element = PeriodicAdvertisement

    /// The advertiser, as the controller reported it (its identity when it resolved an RPA).
    public let advertiser: DeviceAddress
    /// The advertising set's SID.
    public let sid: UInt8
    /// The PHY the train is on.
    public let phy: LEPHY
    /// The periodic advertising interval.
    public let interval: Duration
    let syncHandle: UInt16
    /// The host's id of this sync: a later sync may get the same handle.
    let syncID: UInt64
    let host: HostController
    private let stream: AsyncThrowingStream<PeriodicAdvertisement, Error>

    init(_ established: LEPeriodicSyncEstablished, id: UInt64, stream: AsyncThrowingStream<PeriodicAdvertisement, Error>, host: HostController) {
        syncID = id
        advertiser = established.advertiser
        sid = established.sid
        phy = established.phy
        interval = .microseconds(Int64(established.interval) * 1250)
        syncHandle = established.syncHandle
        self.host = host
        self.stream = stream
    }

    /// The train's advertisements from now on (one reader: the sequence is a single stream).
    /// The iterator holds the sync: `for try await a in try await central.syncTo…(…)` keeps it
    /// while the loop runs, and ends it when the loop is left.
    public func makeAsyncIterator() -> Iterator { Iterator(sync: self, base: stream.makeAsyncIterator()) }

    /// Reads a sync's advertisements, keeping the sync while it reads.
    public struct Iterator: AsyncIteratorProtocol {
        let sync: PeriodicSync
        var base: AsyncThrowingStream<PeriodicAdvertisement, Error>.AsyncIterator

        /// The next advertisement; nil when the sync was ended, `.periodicSyncLost` when lost.
        public mutating func next() async throws -> PeriodicAdvertisement? { try await base.next() }
    }

    /// A sync nobody holds any more (a loop that broke out of it, say) ends on the controller.
    deinit {
        let host = self.host, handle = syncHandle, id = syncID
        Task { await host.run { await $0.periodicSyncs.terminate(handle, id: id, $0) } }
    }

    /// Ends the sync on the controller (LE Periodic Advertising Terminate Sync) and the sequence.
    /// It also ends when this object is released, when the task reading it is cancelled, and
    /// with `.periodicSyncLost`.
    public func terminate() async {
        await host.run { await $0.periodicSyncs.terminate(syncHandle, id: syncID, $0) }
    }
}

extension Central {
    /// Syncs to the periodic advertising of `advertiser`'s set `sid`: scans (passively, on
    /// `phys`) until the controller hears the set's AUX_ADV_IND with its SyncInfo and reports
    /// the sync established (LE Periodic Advertising Create Sync, Sync Established), or fails
    /// with `.timeout` after `timeout` (the attempt is cancelled on the controller). The sync is
    /// lost when no periodic advertisement is heard for `supervisionTimeout` (100 ms ... 163.84 s).
    /// Needs a controller driven with the extended commands that lists periodic sync, else
    /// `.unsupported`.
    ///
    /// The scan ends once the sync is made (a sync needs no scanning, Vol 6 Part B §4.3.5)
    /// unless `keepScanning`: some controllers (rootcanal 1.10) report a train only while they
    /// scan; the scan then ends with the sync.
    public func syncToPeriodicAdvertising(of advertiser: DeviceAddress, sid: UInt8, timeout: Duration = .seconds(10),
                                          supervisionTimeout: Duration = .seconds(5), skip: UInt16 = 0,
                                          phys: LEPHYSet? = nil, keepScanning: Bool = false) async throws -> PeriodicSync {
        try await sync(to: [(advertiser, sid)], timeout: timeout, supervisionTimeout: supervisionTimeout, skip: skip, phys: phys, keepScanning: keepScanning)
    }

    /// Syncs to the first heard of several advertisers' sets, through the controller's Periodic
    /// Advertiser List (Vol 4 Part E §7.8.70–§7.8.72, Create Sync with its option bit 0): the
    /// list is cleared and filled with them first (a controller's list holds a few; more are
    /// refused with `.invalidArgument`). `PeriodicSync.advertiser` and `sid` say which was
    /// found. Otherwise as `syncToPeriodicAdvertising(of:sid:…)`.
    public func syncToPeriodicAdvertising(ofAnyOf advertisers: [(address: DeviceAddress, sid: UInt8)], timeout: Duration = .seconds(10),
                                          supervisionTimeout: Duration = .seconds(5), skip: UInt16 = 0,
                                          phys: LEPHYSet? = nil, keepScanning: Bool = false) async throws -> PeriodicSync {
        guard !advertisers.isEmpty else { throw BLEError.invalidArgument("no advertiser to sync to") }
        let size = try await host.run { host -> Int? in
            guard host.usesExtendedCommands, let c = host.info?.supportedCommands, c.leAddDeviceToPeriodicAdvertiserList,
                  c.leClearPeriodicAdvertiserList else {
                throw BLEError.unsupported("the controller has no Periodic Advertiser List (Vol 4 Part E §7.8.70)")
            }
            guard c.leReadPeriodicAdvertiserListSize else { return nil }
            return Int(try LEPeriodicAdvertiserListSize(returnParameters: try await host.commandReturning(.leReadPeriodicAdvertiserListSize)).size)
        }
        if let size, advertisers.count > size {
            throw BLEError.invalidArgument("\(advertisers.count) advertisers; the controller's Periodic Advertiser List holds \(size)")
        }
        return try await sync(to: advertisers, timeout: timeout, supervisionTimeout: supervisionTimeout, skip: skip, phys: phys, keepScanning: keepScanning)
    }

    private func sync(to advertisers: [(address: DeviceAddress, sid: UInt8)], timeout: Duration, supervisionTimeout: Duration, skip: UInt16,
                      phys: LEPHYSet?, keepScanning: Bool) async throws -> PeriodicSync {
        for (_, sid) in advertisers where sid > 15 { throw BLEError.invalidArgument("advertising SID \(sid) is outside 0 ... 15") }
        guard skip <= 0x01F3 else { throw BLEError.invalidArgument("skip \(skip) is over 499 periodic events") }
        let units = AdvertisingSetParameters.units(supervisionTimeout, 10_000)
        guard (0x000A...0x4000).contains(units) else { throw BLEError.invalidArgument("sync supervision timeout must be 100 ms ... 163.84 s") }
        let phys = phys ?? host.configuration.listeningPHYs
        try await host.run { host in
            guard host.usesExtendedCommands, host.info?.supportedCommands.map({ $0.lePeriodicAdvertisingCreateSync && $0.lePeriodicAdvertisingCreateSyncCancel
                    && $0.lePeriodicAdvertisingTerminateSync }) == true else {
                throw BLEError.unsupported("periodic advertising sync needs a controller with Bluetooth 5's periodic sync commands (Vol 4 Part E §7.8.67)")
            }
            try ListeningPHYs.validate(phys, for: .scanning, extended: true, supported: host.supportedPHYs)
        }
        // The controller finds the train only while it scans (§7.8.67): a passive scan runs,
        // its devices unread, until the sync is made or given up.
        let scan = self.scan(filter: ScanFilter(allowDuplicates: true), active: false, timeout: keepScanning ? nil : timeout + .seconds(1), phys: phys)
        let scanning = Task { for try await _ in scan {} }
        let (stream, continuation) = AsyncThrowingStream<PeriodicAdvertisement, Error>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let host = self.host
        // Set before the sync can end, so its end always stops the scan; a reader that stops
        // reading (the sequence cancelled, not ended) ends the sync on the controller too. The
        // handle, not the `PeriodicSync`, is kept: the object may be gone by then.
        let made = Mutex<(handle: UInt16, id: UInt64)?>(nil)
        continuation.onTermination = { termination in
            scanning.cancel()
            guard case .cancelled = termination, let sync = made.withLock({ $0 }) else { return }
            Task { await host.run { await $0.periodicSyncs.terminate(sync.handle, id: sync.id, $0) } }
        }
        let established: LEPeriodicSyncEstablished
        let syncID: UInt64
        do {
            (established, syncID) = try await host.run { host in
                try await host.periodicSyncs.create(advertisers, skip: skip, syncTimeout: UInt16(units), timeout: timeout,
                                                    stream: continuation, host)
            }
        } catch {
            scanning.cancel()
            throw error
        }
        made.withLock { $0 = (established.syncHandle, syncID) }
        if !keepScanning { scanning.cancel() }
        return PeriodicSync(established, id: syncID, stream: stream, host: host)
    }
}

/// A periodic sync a connected peer handed us (Periodic Advertising Sync Transfer, Core spec Vol
/// 6 Part B §5.1.13, HCI Vol 4 Part E §7.7.65.24).
public struct TransferredPeriodicSync: Sendable {
    /// The sync, made already: read its advertisements as from `syncToPeriodicAdvertising`.
    public let sync: PeriodicSync
    /// The peer that sent it, if its link was still known.
    public let from: DeviceAddress?
    /// The value the peer's host sent with it (Service_Data).
    public let serviceData: UInt16
}

/// Periodic Advertising Sync Transfer (PAST, Vol 4 Part E §7.8.89–§7.8.92), shared by both
/// roles: a sync handed over a link costs the receiver no scanning (a phone helping a peripheral
/// find a broadcast, say).
extension HostController {
    func transferPeriodicSync(_ source: PeriodicSyncCoordinator.TransferSource, linkID: UInt64, serviceData: UInt16) async throws {
        try await run { try await $0.periodicSyncs.transfer(source, linkID: linkID, serviceData: serviceData, $0) }
    }

    /// Accepts transfers from now on; each sync arrives on the stream, which ends when the host
    /// fails or closes, or another call takes over.
    func periodicSyncTransfers(supervisionTimeout: Duration) async throws -> AsyncStream<TransferredPeriodicSync> {
        let units = AdvertisingSetParameters.units(supervisionTimeout, 10_000)
        guard (0x000A...0x4000).contains(units) else { throw BLEError.invalidArgument("sync supervision timeout must be 100 ms ... 163.84 s") }
        let (transfers, sink) = AsyncStream<TransferredPeriodicSync>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let host = self
        let id = try await run { h in
            try await h.periodicSyncs.acceptTransfers(syncTimeout: UInt16(units), listener: { news in
                switch news {
                case let .received(event, syncID, peer, stream):
                    sink.yield(TransferredPeriodicSync(sync: PeriodicSync(event.sync, id: syncID, stream: stream, host: host), from: peer,
                                                       serviceData: event.serviceData))
                case .ended:
                    sink.finish()
                }
            }, h)
        }
        // The consumer stopped reading (or another call took over): no more transfers for it.
        sink.onTermination = { _ in
            Task(executorPreference: host.clock.taskExecutor) { await host.run { await $0.periodicSyncs.stopAcceptingTransfers(id, $0) } }
        }
        return transfers
    }
}

extension Central {
    /// Accepts periodic syncs that connected peers transfer (LE Set Default Periodic Advertising
    /// Sync Transfer Parameters, and the same for each link up now), with reports on; each
    /// arrives on the returned sequence. `.unsupported` where the controller cannot receive them.
    public func periodicSyncTransfers(supervisionTimeout: Duration = .seconds(5)) async throws -> AsyncStream<TransferredPeriodicSync> {
        try await host.periodicSyncTransfers(supervisionTimeout: supervisionTimeout)
    }
}

extension Peripheral {
    /// Hands this peer our sync (LE Periodic Advertising Sync Transfer, Vol 4 Part E §7.8.89):
    /// it syncs to the same train without scanning. `serviceData` is for the peer's host.
    public func transferPeriodicSync(_ sync: PeriodicSync, serviceData: UInt16 = 0) async throws {
        try await host.transferPeriodicSync(.sync(sync.syncHandle, id: sync.syncID), linkID: linkID, serviceData: serviceData)
    }

    /// Hands this peer the sync information of our own set's periodic advertising (LE Periodic
    /// Advertising Set Info Transfer, §7.8.90), from a `PeripheralManager` sharing the controller.
    public func transferAdvertisingSet(_ set: AdvertisingSet, serviceData: UInt16 = 0) async throws {
        try await host.transferPeriodicSync(.advertisingSet(set.handle), linkID: linkID, serviceData: serviceData)
    }
}

extension PeripheralManager {
    /// Hands a connected central the sync information of our set's periodic advertising (LE
    /// Periodic Advertising Set Info Transfer, Vol 4 Part E §7.8.90).
    public func transferAdvertisingSet(_ set: AdvertisingSet, to central: ConnectedCentral, serviceData: UInt16 = 0) async throws {
        try await host.transferPeriodicSync(.advertisingSet(set.handle), linkID: central.id, serviceData: serviceData)
    }

    /// Hands a connected central a sync of ours (LE Periodic Advertising Sync Transfer, §7.8.89),
    /// from a `Central` sharing the controller.
    public func transferPeriodicSync(_ sync: PeriodicSync, to central: ConnectedCentral, serviceData: UInt16 = 0) async throws {
        try await host.transferPeriodicSync(.sync(sync.syncHandle, id: sync.syncID), linkID: central.id, serviceData: serviceData)
    }

    /// Accepts periodic syncs connected centrals transfer, as `Central.periodicSyncTransfers`.
    public func periodicSyncTransfers(supervisionTimeout: Duration = .seconds(5)) async throws -> AsyncStream<TransferredPeriodicSync> {
        try await host.periodicSyncTransfers(supervisionTimeout: supervisionTimeout)
    }
}
