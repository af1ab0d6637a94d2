import BLEHCI
import BLEWire

/// Bluetooth 5 advertising on the medium: each advertising set's events at its own interval
/// (Vol 6 Part B §4.4.2.2), what extended scanners hear of them when the auxiliary chain has
/// gone over the air, connections from connectable sets (AUX_CONNECT_REQ, on the secondary
/// PHY), periodic trains (§4.4.2.12) and the syncs that follow them, lost after their
/// Sync_Timeout without a train in range, and an extended scan's duration.
extension VirtualMedium {
    /// One advertising set of one controller.
    struct SetKey: Hashable, Comparable {
        var id: ControllerID
        var handle: UInt8
        static func < (a: SetKey, b: SetKey) -> Bool { (a.id, a.handle) < (b.id, b.handle) }
        /// The key of this set's train numbered `serial`.
        func train(_ serial: UInt64) -> PeriodicTrainKey { PeriodicTrainKey(controller: id.rawValue, handle: handle, serial: serial) }
    }

    /// One periodic sync of one scanner.
    struct SyncKey: Hashable, Comparable {
        var listener: ControllerID
        var handle: UInt16
        static func < (a: SyncKey, b: SyncKey) -> Bool { (a.listener, a.handle) < (b.listener, b.handle) }
    }

    /// Reports that reach their hosts when the PDUs they came in have gone over the air.
    struct PendingReception: Sendable {
        var due: Duration
        var deliveries: [Delivery]
    }

    /// Every auxiliary chain `id` sends (extended advertising, scan responses and periodic
    /// trains) loses its PDU at `index` (1: the first AUX_CHAIN_IND), as a scanner losing a
    /// fragment to interference: scanners report what came before it as truncated (Vol 4 Part E
    /// §7.7.65.13). Nil ends the fault.
    public mutating func loseAuxiliaryPDU(of id: ControllerID, index: Int?) {
        guard exists(id) else { return }
        chainLoss[id] = index
    }

    /// The earliest Bluetooth 5 deadline: a set's or train's event, a sync's loss, a scan's end,
    /// reports in flight.
    var extendedDeadline: Duration? {
        var next: Duration?
        func take(_ t: Duration) { next = next.map { min($0, t) } ?? t }
        for t in nextSetEvent.values { take(t) }
        for t in nextPeriodicEvent.values { take(t) }
        for t in syncLossDeadlines.values { take(t) }
        for t in scanEnds.values { take(t) }
        if let first = pendingReceptions.first { take(first.due) }
        return next
    }

    /// A controller reset, went off or left: its sets, trains, syncs and scan are gone, and
    /// reports on their way to its host are lost with them (a host that resets must not hear
    /// the old scan).
    mutating func forgetBluetooth5State(of id: ControllerID) {
        for key in nextSetEvent.keys where key.id == id { nextSetEvent[key] = nil }
        for key in setSince.keys where key.id == id { setSince[key] = nil }
        for key in setEnables.keys where key.id == id { setEnables[key] = nil }
        for key in nextPeriodicEvent.keys where key.id == id { nextPeriodicEvent[key] = nil }
        for key in syncLossDeadlines.keys where key.listener == id { syncLossDeadlines[key] = nil }
        scanEnds[id] = nil
        for i in pendingReceptions.indices { pendingReceptions[i].deliveries.removeAll { $0.to == id } }
        pendingReceptions.removeAll { $0.deliveries.isEmpty }
    }

    /// Re-reads `id`'s sets and trains after its host changed them: new ones start at once
    /// (the first advertising event follows the enable, §4.4.2.2), stopped ones leave the air.
    mutating func refreshSets(of id: ControllerID, now: Duration) {
        let controller = nodes[id.rawValue].controller
        let enabled = Set(controller.enabledSetHandles)
        for key in nextSetEvent.keys where key.id == id && !enabled.contains(key.handle) {
            nextSetEvent[key] = nil
            setSince[key] = nil
            setEnables[key] = nil
        }
        for handle in enabled {
            // A set enabled again while it runs starts its duration again (§7.8.56).
            let key = SetKey(id: id, handle: handle), enables = controller.advertisingSets[handle]?.enables ?? 0
            guard nextSetEvent[key] == nil || setEnables[key] != enables else { continue }
            nextSetEvent[key] = nextSetEvent[key] ?? now
            setSince[key] = now
            setEnables[key] = enables
        }
        let trains = Set(controller.runningTrainHandles)
        for key in nextPeriodicEvent.keys where key.id == id && !trains.contains(key.handle) { nextPeriodicEvent[key] = nil }
        for handle in trains where nextPeriodicEvent[SetKey(id: id, handle: handle)] == nil {
            nextPeriodicEvent[SetKey(id: id, handle: handle)] = now
        }
    }

    /// An extended scan with a Scan_Duration ends then, or with a Scan_Period rests then
    /// (§7.8.65).
    mutating func refreshScan(of id: ControllerID, now: Duration) {
        let controller = nodes[id.rawValue].controller
        if controller.isScanning, let duration = controller.scanDuration {
            scanEnds[id] = now + duration
        } else {
            scanEnds[id] = nil
        }
    }

    /// Runs the Bluetooth 5 work due at `due`, if any is; nil when none is (the caller runs
    /// the legacy work instead).
    mutating func runExtended(due: Duration, now: Duration) -> [Delivery]? {
        if let first = pendingReceptions.first, first.due == due {
            pendingReceptions.removeFirst()
            return first.deliveries.filter(stillWanted)
        }
        if let (key, time) = nextSetEvent.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), time == due {
            return setEvent(key, at: time, now: now)
        }
        if let (key, time) = nextPeriodicEvent.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), time == due {
            return periodicEvent(key, at: time, now: now)
        }
        if let (key, time) = syncLossDeadlines.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), time == due {
            syncLossDeadlines[key] = nil
            return deliver(to: key.listener) { $0.syncLost(key.handle) }
        }
        if let (id, time) = scanEnds.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), time == due {
            let (toHost, next) = nodes[id.rawValue].controller.scanDurationEnded()
            scanEnds[id] = next.map { time + $0 }
            return nodes[id.rawValue].onAir ? toHost.map { Delivery(to: id, packet: $0) } : []
        }
        return nil
    }

    /// Whether a report that was on the air still reaches its host: not once the host has
    /// stopped what it belonged to (its scan disabled, its sync terminated) or the controller
    /// went off.
    private func stillWanted(_ delivery: Delivery) -> Bool {
        let node = nodes[delivery.to.rawValue]
        guard node.onAir else { return false }
        switch delivery.packet {
        case .event(.le(.extendedAdvertisingReport)): return node.controller.isScanning && node.controller.extendedScanning
        case let .event(.le(.periodicAdvertisingReport(report))): return node.controller.syncs[report.syncHandle] != nil
        default: return true
        }
    }

    /// Deliveries that arrive `after` from now, in order with the others in flight.
    mutating func deliverLater(_ deliveries: [Delivery], at due: Duration) {
        guard !deliveries.isEmpty else { return }
        let index = pendingReceptions.firstIndex { $0.due > due } ?? pendingReceptions.endIndex
        pendingReceptions.insert(PendingReception(due: due, deliveries: deliveries), at: index)
    }

    /// One advertising event of a set (§7.8.56): ended instead when its duration or event limit
    /// ran out.
    private mutating func setEvent(_ key: SetKey, at time: Duration, now: Duration) -> [Delivery] {
        guard nodes[key.id.rawValue].onAir else {
            nextSetEvent[key] = nil
            return []
        }
        let elapsed = time - (setSince[key] ?? time)
        if let ended = nodes[key.id.rawValue].controller.setEventDue(key.handle, elapsed: elapsed) {
            nextSetEvent[key] = nil
            setSince[key] = nil
            return ended.map { Delivery(to: key.id, packet: $0) }
        }
        guard let adv = nodes[key.id.rawValue].controller.advertisement(ofSet: key.handle) else {
            nextSetEvent[key] = nil
            return []
        }
        // A late driver skips missed events rather than bursting.
        let next = time + adv.interval
        nextSetEvent[key] = next > now ? next : now + adv.interval
        // The set ends when its duration runs out or after its last allowed event, not at the
        // next event after (§7.8.56).
        if let set = nodes[key.id.rawValue].controller.advertisingSets[key.handle] {
            if let duration = set.duration, let since = setSince[key], let scheduled = nextSetEvent[key], since + duration < scheduled {
                nextSetEvent[key] = max(since + duration, time)
            }
            if set.maxEvents > 0, set.completedEvents >= Int(set.maxEvents) { nextSetEvent[key] = time }
        }
        return advertisingEvent(from: key.id, adv, now: time)
    }

    /// What an extended scanner hears of `adv` from `id`: its reports, delivered when the
    /// event's PDUs (and the scan response's, when it scans actively) have gone over the air.
    mutating func extendedHearing(of adv: VirtualAdvertisement, from id: ControllerID, by listener: ControllerID,
                                  rssi: Int8, at time: Duration) {
        // Only a scanner hears anything: the chain's sizes and air time are not worked out for
        // the rest.
        guard let ext = adv.extended, nodes[listener.rawValue].controller.isScanning else { return }
        let header = Self.auxAdvertisingHeader(adv)
        let chained = adv.isScannable ? adv.scanResponse : adv.data
        let received = chainLoss[id].flatMap { AirTime.receivedBefore(lost: $0, dataCount: chained.count, firstHeader: header) }
        let heard = nodes[listener.rawValue].controller.hear(adv, rssi: rssi, received: received)
        var air = AirTime.extendedAdvertisingEvent(primary: ext.primaryPHY, secondary: ext.secondaryPHY,
                                                   auxPayloads: AirTime.auxPayloads(dataCount: adv.isScannable ? 0 : adv.data.count, firstHeader: header))
        if adv.isScannable {
            // AUX_SCAN_REQ (12 octets: ScanA, AdvA), then AUX_SCAN_RSP and its chain.
            air += AirTime.interFrameSpace + AirTime.packet(payload: 12, phy: ext.secondaryPHY) + AirTime.interFrameSpace
                + AirTime.auxChain(AirTime.auxPayloads(dataCount: adv.scanResponse.count, firstHeader: 1 + 1 + 6), phy: ext.secondaryPHY)
        }
        deliverLater(heard.map { Delivery(to: listener, packet: $0) }, at: time + air)
    }

    /// The extended header of `adv`'s AUX_ADV_IND: length and mode, flags, AdvA, TargetA when
    /// directed, ADI, TX power when included, SyncInfo with a periodic train (Vol 6 Part B §2.3.4).
    static func auxAdvertisingHeader(_ adv: VirtualAdvertisement) -> Int {
        var header = 1 + 1 + 2
        if adv.extended?.anonymous != true { header += 6 }
        if adv.directTarget != nil { header += 6 }
        if adv.extended?.txPower != nil { header += 1 }
        if (adv.extended?.periodicInterval ?? 0) > 0 { header += 18 }
        return header
    }

    /// A scanner with a pending Create Sync that hears the set's SyncInfo listens for the train
    /// (`VirtualController.heardSyncInfo`); the sync is made at the train's next event.
    mutating func heardSyncInfo(in adv: VirtualAdvertisement, from id: ControllerID, listener: ControllerID, at time: Duration) {
        guard let handle = adv.setHandle, let ext = adv.extended, ext.periodicInterval > 0 else { return }
        // The SyncInfo is in hand once the ADV_EXT_IND and AUX_ADV_IND have gone over the air.
        let received = time + AirTime.extendedAdvertisingEvent(primary: ext.primaryPHY, secondary: ext.secondaryPHY,
                                                               auxPayloads: [Self.auxAdvertisingHeader(adv)])
        nodes[listener.rawValue].controller.heardSyncInfo(of: SetKey(id: id, handle: handle).train(ext.periodicSerial), in: adv,
                                                          receivedAt: received)
    }

    /// One event of a periodic train: every sync following it in range gets its reports when
    /// the AUX_SYNC_IND chain has gone over the air, and its Sync_Timeout starts again.
    private mutating func periodicEvent(_ key: SetKey, at time: Duration, now: Duration) -> [Delivery] {
        guard nodes[key.id.rawValue].onAir, let train = nodes[key.id.rawValue].controller.periodicTrain(ofSet: key.handle) else {
            nextPeriodicEvent[key] = nil
            return []
        }
        let interval = Self.interval(train.interval)
        let next = time + interval
        nextPeriodicEvent[key] = next > now ? next : now + interval
        let trainKey = key.train(train.serial)
        // AUX_SYNC_IND's extended header: length and mode, flags, TX power when included.
        let header = 1 + 1 + (train.txPower == nil ? 0 : 1)
        let received = chainLoss[key.id].flatMap { AirTime.receivedBefore(lost: $0, dataCount: train.data.count, firstHeader: header) }
        let air = AirTime.auxChain(AirTime.auxPayloads(dataCount: train.data.count, firstHeader: header), phy: train.phy)
        for index in nodes.indices where index != key.id.rawValue && nodes[index].onAir {
            let listener = ControllerID(rawValue: index)
            let waiting = nodes[index].controller.pendingSync?.found == trainKey
            guard waiting || !nodes[index].controller.syncHandles(following: trainKey).isEmpty,
                  let rssi = rssi(from: key.id, to: listener, phy: train.phy) else { continue }
            var heard: [HostBoundPacket] = []
            if waiting, let (sync, timeout, toHost) = nodes[index].controller.establishPendingSync(trainKey, train, at: time) {
                syncLossDeadlines[SyncKey(listener: listener, handle: sync)] = time + timeout
                heard += toHost
            }
            for sync in nodes[index].controller.syncHandles(following: trainKey) {
                if let state = nodes[index].controller.syncs[sync] {
                    syncLossDeadlines[SyncKey(listener: listener, handle: sync)] = time + state.timeout
                }
            }
            heard += nodes[index].controller.hearPeriodic(trainKey, train, rssi: rssi, received: received)
            deliverLater(heard.map { Delivery(to: listener, packet: $0) }, at: time + air)
        }
        return []
    }

    /// LL_PERIODIC_SYNC_IND over the link of `end` (Vol 6 Part B §5.1.13): the peer's controller
    /// syncs to the train named, while it runs, and its sync is lost after its timeout without
    /// it like any other. Nothing crosses a link whose peer is out of range.
    mutating func transferSync(from end: LinkEnd, serviceData: UInt16, _ source: SyncTransferSource, now: Duration) -> [Delivery] {
        guard let (linkID, _) = link(of: end), let l = links[linkID], l.lossDeadline == nil, let peer = l.other(than: end) else { return [] }
        var train: PeriodicTrainKey
        switch source {
        case let .sync(key): train = key
        case let .ownSet(handle): train = SetKey(id: end.id, handle: handle).train(0)
        }
        guard nodes.indices.contains(train.controller), nodes[train.controller].onAir,
              let t = nodes[train.controller].controller.periodicTrain(ofSet: train.handle) else { return [] }
        // Our own set's train is the one running now; a sync's must still be the one it follows.
        if case .ownSet = source { train.serial = t.serial }
        guard t.serial == train.serial,
              let (sync, timeout, toHost) = nodes[peer.id.rawValue].controller.syncTransferred(
                connection: peer.handle, serviceData: serviceData, train: train, t) else { return [] }
        syncLossDeadlines[SyncKey(listener: peer.id, handle: sync)] = now + timeout
        return toHost.map { Delivery(to: peer.id, packet: $0) }
    }
}
