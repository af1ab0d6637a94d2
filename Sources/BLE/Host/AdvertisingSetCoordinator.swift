import BLEHCI
import BLEWire

/// One advertising set the application started, as the host keeps it to change, pause, restart
/// and stop it.
struct AdvertisingSetRecord {
    var set: AdvertisingSet
    var parameters: AdvertisingSetParameters
    var enable: AdvertisingSetEnable
    /// The random address given to the controller for the set, if it uses one.
    var randomAddress: BDAddress?
    var periodic: Bool
    /// Still being configured by `start` (its handle and SID are taken; it is not listed).
    var starting = false
    /// Whether the controller is advertising the set now.
    var enabled = true
    /// An enable is in flight: a pause must turn the set off too.
    var enabling = false
    /// The controller confirmed the set's last enable and nothing has turned it off since
    /// (what a refused pause falls back to, whatever the generation says).
    var confirmedOn = false
    /// Whether the application wants it advertising (false once it timed out, hit its event
    /// limit, or was stopped).
    var wanted = true
    /// Bumped by everything that turns it on or off, so a restart scheduled before is dropped.
    var generation: UInt64 = 0
}

/// Bluetooth 5's advertising sets (Core spec Vol 4 Part E §7.8.52–§7.8.63): several at once, each
/// with its own parameters, address, data (fragmented over commands up to the controller's
/// maximum), scan response, optional periodic advertising, duration and event limit; and the LE
/// Advertising Set Terminated event (§7.7.65.18) that ends one by itself. Set 0 is left to
/// `AdvertisingCoordinator` (the `startAdvertising` advertising) and taken last, only while that
/// does not use it. Isolated to the host actor, known to it as an
/// `AdvertisingSetDriver`.
final class AdvertisingSetCoordinator {
    private(set) var records: [UInt8: AdvertisingSetRecord] = [:]
    /// The set each peripheral-role link was made from, to restart it when the link ends.
    private var linkSets: [UInt16: UInt8] = [:]
    /// Set Terminated events for a connection not reported yet, by its handle (`terminated`).
    private var earlyTerminations: [UInt16: (event: LEAdvertisingSetTerminated, generation: UInt64)] = [:]
    /// At most this many wait: a controller that never reports their links leaves no more.
    static let earlyTerminationLimit = 8
    /// Sets turned off by `pause` (or kept off during one), turned on again by `resume`.
    private var paused: [UInt8] = []
    /// Pauses under way: while any is, nothing turns a set on (it joins `paused` instead).
    private var pauseDepth = 0

    /// Whether any set is advertising now.
    var isEnabled: Bool { records.values.contains { $0.enabled } }

    /// Whether the application's sets hold handle 0.
    var holdsSetZero: Bool { records[0] != nil }

    /// Configures and enables a new set: parameters, its random address, periodic advertising,
    /// data and scan response (each cut into commands), then enable. A failure part-way removes
    /// the set again, so nothing is left half made.
    func start(_ parameters: AdvertisingSetParameters, data: [UInt8], scanResponse: [UInt8]?,
               periodic: (parameters: PeriodicAdvertisingParameters, data: [UInt8])?,
               _ host: isolated some AdvertisingSetDriver) async throws -> AdvertisingSet {
        if let failure = host.failure { throw failure }
        guard host.usesExtendedCommands, let info = host.info else {
            throw BLEError.unsupported("advertising sets need a controller driven with Bluetooth 5's extended advertising commands (Vol 4 Part E §7.8.53)")
        }
        let limit = parameters.legacyPDUs ? AdvertisingData.legacyLimit : (info.maximumAdvertisingDataLength ?? AdvertisingDataFragment.extendedLimit)
        try Self.check(parameters, data: data, scanResponse: scanResponse, periodic: periodic, limit: limit, info)
        let periodicUnits = try periodic?.parameters.units()
        guard let handle = freeHandle(sets: info.advertisingSets ?? 1, host) else {
            throw BLEError.unsupported("the controller runs \(info.advertisingSets ?? 1) advertising set(s), all in use")
        }
        let sid = try parameters.sid ?? freeSID()
        // Checked before the handle is taken: nothing to undo when the parameters are wrong.
        _ = try parameters.validated(handle: handle, sid: sid, ownAddressType: .public)
        if case let .random(a) = parameters.address { try Self.checkRandom(a) }
        // The handle and SID are this start's from here on (the host runs other calls at each
        // command): a placeholder holds them, not listed, until the set is on.
        let placeholder = AdvertisingSet(handle: handle, sid: sid, address: nil, txPower: LEAdvertisingReport.unavailable, extended: !parameters.legacyPDUs)
        records[handle] = AdvertisingSetRecord(set: placeholder, parameters: parameters, enable: AdvertisingSetEnable(handle: handle),
                                               randomAddress: nil, periodic: periodic != nil, starting: true, enabled: false)
        do {
            // Set 0 may still hold `startAdvertising`'s data and scan response, which parameters
            // of another kind are refused over: it goes first (an unknown set is no matter).
            if handle == 0, host.advertising.setZeroTakenBySets() {
                _ = try? await host.commandReturning(.leRemoveAdvertisingSet(handle: 0))
            }
            await host.prepareRadioForAdvertising()
            let (ownType, random) = try Self.ownAddress(parameters.address, host)
            let (hciParameters, enable) = try parameters.validated(handle: handle, sid: sid, ownAddressType: ownType)
            let answer = try await host.commandReturning(.leSetExtendedAdvertisingParameters(hciParameters))
            let txPower = (try? LESelectedTxPower(returnParameters: answer))?.txPower ?? LEAdvertisingReport.unavailable
            if let random { try await host.commandReturning(.leSetAdvertisingSetRandomAddress(handle: handle, address: random)) }
            if let periodic, let periodicUnits {
                try await host.commandReturning(.leSetPeriodicAdvertisingParameters(
                    handle: handle, intervalMin: periodicUnits.min, intervalMax: periodicUnits.max, includeTxPower: periodic.parameters.includeTxPower))
                try await setData(periodic.data, kind: .periodic, handle: handle, host)
                try await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: true, handle: handle))
            }
            // A scannable extended set has no advertising data (§7.8.54): only its scan response.
            if !(parameters.kind == .scannable && !parameters.legacyPDUs) { try await setData(data, kind: .advertising, handle: handle, host) }
            if parameters.isScannable { try await setData(scanResponse ?? [], kind: .scanResponse, handle: handle, host) }
            let address = parameters.anonymous ? nil : random.map { DeviceAddress($0, type: .random) } ?? host.ownAdvertisingAddress
            let set = AdvertisingSet(handle: handle, sid: sid, address: address, txPower: txPower, extended: !parameters.legacyPDUs)
            records[handle]?.set = set
            records[handle]?.enable = enable
            records[handle]?.randomAddress = random
            records[handle]?.starting = false
            try await turnOn(handle, host)
            return set
        } catch {
            // The handle stays taken until the controller has forgotten the set.
            await remove(handle, periodic: periodic != nil, host)
            records[handle] = nil
            throw error
        }
    }

    /// Replaces a running set's advertising data, scan response or periodic data. Data that
    /// needs more than one command cannot change while the set advertises (§7.8.54, §7.8.62):
    /// the set goes off for the change and on again.
    func update(_ handle: UInt8, _ kind: AdvertisingDataKind, _ bytes: [UInt8], _ host: isolated some AdvertisingSetDriver) async throws {
        guard let record = records[handle] else { throw BLEError.invalidArgument("no advertising set \(handle) is running") }
        let info = host.info
        let limit = record.parameters.legacyPDUs ? AdvertisingData.legacyLimit : (info?.maximumAdvertisingDataLength ?? AdvertisingDataFragment.extendedLimit)
        guard !record.starting else { throw BLEError.invalidArgument("advertising set \(handle) is still starting") }
        switch kind {
        case .advertising:
            if record.parameters.kind == .scannable && !record.parameters.legacyPDUs {
                guard bytes.isEmpty else {
                    throw BLEError.invalidArgument("a scannable extended set has no advertising data, only a scan response (Vol 4 Part E §7.8.54)")
                }
                return
            }
        case .scanResponse:
            guard record.parameters.isScannable else { throw BLEError.invalidArgument("set \(handle) is not scannable: it has no scan response") }
            guard !bytes.isEmpty || record.parameters.legacyPDUs else {
                throw BLEError.invalidArgument("a scannable extended set needs a scan response (Vol 4 Part E §7.8.56)")
            }
        case .periodic:
            guard record.periodic else { throw BLEError.invalidArgument("set \(handle) has no periodic advertising") }
        }
        guard bytes.count <= limit else {
            throw BLEError.invalidArgument("\(kind) is \(bytes.count) octets; set \(handle) holds at most \(limit)")
        }
        let pieces = kind == .periodic ? AdvertisingDataFragment.fragments(of: bytes, limit: AdvertisingDataFragment.periodicLimit)
            : AdvertisingDataFragment.fragments(of: bytes, limit: AdvertisingDataFragment.extendedLimit)
        if pieces.count == 1 || !(kind == .periodic ? record.periodic : record.enabled) {
            try await setData(bytes, kind: kind, handle: handle, host)
            return
        }
        if kind == .periodic {
            try await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: false, handle: handle))
            do {
                try await setData(bytes, kind: kind, handle: handle, host)
            } catch {
                // The old data stays: periodic advertising goes on with it.
                _ = try? await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: true, handle: handle))
                throw error
            }
            try await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: true, handle: handle))
            return
        }
        try await host.commandReturning(.leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: handle)]))
        // In place: a termination may have come during the disable, and is kept.
        records[handle]?.generation &+= 1
        records[handle]?.enabled = false
        do {
            try await setData(bytes, kind: kind, handle: handle, host)
        } catch {
            // The old data stays (a refused fragment leaves the set's data as it was, §7.8.54):
            // the set goes on with it.
            do { try await turnOn(handle, host) } catch { host.report(.advertisingFailed("set \(handle): \(error)")) }
            throw error
        }
        try await turnOn(handle, host)
    }

    /// Stops a set and removes it from the controller (periodic advertising first: a set is
    /// removed only with both off, §7.8.59).
    /// Disabling is sent whatever the host believes (a restart may be in flight; disabling a set
    /// that is off does nothing, §7.8.56), and the set is forgotten only once it is removed, so a
    /// failed stop can be tried again.
    func stop(_ handle: UInt8, _ host: isolated some AdvertisingSetDriver) async throws {
        guard let record = records[handle], !record.starting else { throw BLEError.invalidArgument("no advertising set \(handle) is running") }
        records[handle]?.wanted = false
        records[handle]?.generation &+= 1
        paused.removeAll { $0 == handle }
        try await host.commandReturning(.leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: handle)]))
        records[handle]?.enabled = false
        if record.periodic { try await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: false, handle: handle)) }
        try await host.commandReturning(.leRemoveAdvertisingSet(handle: handle))
        records[handle] = nil
        linkSets = linkSets.filter { $0.value != handle }
        earlyTerminations = earlyTerminations.filter { $0.value.event.advertisingHandle != handle }
    }

    /// LE Advertising Set Terminated (§7.7.65.18) for one of the application's sets: it is off.
    /// A connection made from it is its; a connectable set that should go on advertising is
    /// turned on again. Returns false when the set is not one of these (set 0 of
    /// `startAdvertising`).
    func terminated(_ event: LEAdvertisingSetTerminated, _ host: isolated some AdvertisingSetDriver) -> Bool {
        guard var record = records[event.advertisingHandle] else { return false }
        // For an earlier set with this handle: the one starting has not been enabled yet.
        guard !record.starting else { return true }
        // A connection not reported yet (some controllers send this before LE Connection
        // Complete, though §7.7.65.18 has it after): it waits for the link (`linkOpened`).
        if event.status.isSuccess, host.link(event.connectionHandle) == nil, earlyTerminations.count < Self.earlyTerminationLimit {
            earlyTerminations[event.connectionHandle] = (event, record.generation)
            return true
        }
        record.enabled = false
        record.enabling = false
        record.confirmedOn = false
        record.generation &+= 1
        let reason: AdvertisingSetTermination.Reason
        var restart = false
        if event.status.isSuccess, let central = host.link(event.connectionHandle)?.central {
            reason = .connected(central)
            linkSets[event.connectionHandle] = event.advertisingHandle
            restart = record.wanted && record.parameters.continueWhileConnected
        } else {
            switch event.status {
            case .advertisingTimeout: reason = .timeout
            case .limitReached: reason = .limitReached
            default: reason = event.status.isSuccess ? .failed(.unknownConnectionIdentifier) : .failed(event.status)
            }
            record.wanted = false
        }
        records[event.advertisingHandle] = record
        host.report(.advertisingSetTerminated(AdvertisingSetTermination(
            set: event.advertisingHandle, reason: reason, completedEvents: Int(event.completedEvents), restarting: restart)))
        if restart { scheduleRestart(event.advertisingHandle, host) }
        return true
    }

    /// A peripheral-role link is up: a Set Terminated that named it before it was reported is
    /// taken now.
    func linkOpened(handle: UInt16, _ host: isolated some AdvertisingSetDriver) {
        guard let (event, generation) = earlyTerminations.removeValue(forKey: handle) else { return }
        // Only for the set as it was then (not stopped, restarted or replaced since).
        guard records[event.advertisingHandle]?.generation == generation else { return }
        _ = terminated(event, host)
    }

    /// A peripheral-role link ended: the set it was made from advertises again if asked to.
    func linkEnded(handle: UInt16, _ host: isolated some AdvertisingSetDriver) {
        guard let set = linkSets.removeValue(forKey: handle), let record = records[set],
              record.wanted, !record.enabled, record.parameters.restartAfterDisconnect else { return }
        scheduleRestart(set, host)
    }

    /// Turns every enabled set off for a moment (privacy renews the address or loads the
    /// resolving list, which no enabled set may see, §7.8.38).
    func pause(_ host: isolated some AdvertisingSetDriver) async throws {
        pauseDepth += 1
        // An enable in flight is turned off too: the disable goes out after it.
        let on = records.values.filter { $0.enabled || $0.enabling }.map(\.set.handle).sorted()
        guard !on.isEmpty else { return }
        let generations = on.map { records[$0]?.generation }
        for handle in on { records[handle]?.generation &+= 1 }
        do {
            try await host.commandReturning(.leSetExtendedAdvertisingEnable(enable: false, sets: on.map { AdvertisingSetEnable(handle: $0) }))
        } catch {
            // The controller refused: the sets are as they were (an enable in flight counts
            // again), and there will be no resume, so what waited for one goes out now.
            // An enable that was in flight has gone through: the set is on.
            for (handle, before) in zip(on, generations) where records[handle]?.generation == before.map({ $0 &+ 1 }) {
                if records[handle]?.confirmedOn == true { records[handle]?.enabled = true }
            }
            pauseDepth -= 1
            if pauseDepth == 0 { await turnOnPaused(host) }
            throw error
        }
        for (handle, before) in zip(on, generations) {
            records[handle]?.enabled = false
            records[handle]?.confirmedOn = false
            // Ended meanwhile (a connection, a timeout): its own rules say whether it comes back.
            if let now = records[handle]?.generation, let before, now == before &+ 1, records[handle]?.wanted == true {
                paused.append(handle)
            }
        }
    }

    /// Ends a `pause`: each paused set still wanted goes on again, a set from the host's
    /// address with the host's (maybe renewed) random address. Its duration starts again.
    func resume(_ host: isolated some AdvertisingSetDriver) async {
        guard pauseDepth > 0 else { return }
        pauseDepth -= 1
        guard pauseDepth == 0 else { return }
        await turnOnPaused(host)
    }

    /// Turns on the sets a pause held back that are still wanted.
    private func turnOnPaused(_ host: isolated some AdvertisingSetDriver) async {
        let handles = paused
        paused = []
        for handle in handles where records[handle]?.wanted == true && records[handle]?.enabled == false && records[handle]?.starting == false {
            do {
                try await turnOn(handle, host)
            } catch {
                host.log("advertising set \(handle) after a new address: \(error)")
                host.report(.advertisingFailed("set \(handle): \(error)"))
            }
        }
    }

    /// After a failed controller: every set is gone with it.
    func reset() {
        records = [:]
        linkSets = [:]
        earlyTerminations = [:]
        paused = []
        pauseDepth = 0
    }

    // MARK: - Steps

    private func scheduleRestart(_ handle: UInt8, _ host: isolated some AdvertisingSetDriver) {
        guard let generation = records[handle]?.generation else { return }
        host.spawn("advertising set \(handle) restart") {
            await host.run { host in
                guard let r = host.advertisingSets.records[handle], r.wanted, !r.enabled, !r.starting, r.generation == generation else { return }
                do {
                    try await host.advertisingSets.turnOn(handle, host)
                } catch {
                    host.log("advertising set \(handle) restart failed: \(error)")
                    host.report(.advertisingFailed("set \(handle): \(error)"))
                }
            }
        }
    }

    /// Enables a configured set, giving it the host's current random address first when it
    /// advertises from the host's address (privacy may have renewed it).
    /// During a pause the set only joins those `resume` turns on. An LE Advertising Set
    /// Terminated that comes while the enable is in flight (it bumps the generation) wins: the
    /// set is then off.
    private func turnOn(_ handle: UInt8, _ host: isolated some AdvertisingSetDriver) async throws {
        guard let record = records[handle], record.wanted, !record.starting else { return }
        guard pauseDepth == 0 else {
            if !paused.contains(handle) { paused.append(handle) }
            return
        }
        let entry = record.generation
        if case .host = record.parameters.address, let random = record.randomAddress {
            let current = host.ownRandomAddress ?? random
            try await host.commandReturning(.leSetAdvertisingSetRandomAddress(handle: handle, address: current))
            records[handle]?.randomAddress = current
            // Stopped, ended or paused during that command: not turned on now.
            guard let now = records[handle], now.wanted, now.generation == entry else { return }
            guard pauseDepth == 0 else {
                if !paused.contains(handle) { paused.append(handle) }
                return
            }
        }
        records[handle]?.generation &+= 1
        records[handle]?.enabling = true
        let generation = records[handle]?.generation
        defer { records[handle]?.enabling = false }
        try await host.commandReturning(.leSetExtendedAdvertisingEnable(enable: true, sets: [record.enable]))
        records[handle]?.confirmedOn = true
        if records[handle]?.generation == generation { records[handle]?.enabled = true }
    }

    /// Sends `bytes` as the set's data of `kind`, cut into commands with their operations.
    private func setData(_ bytes: [UInt8], kind: AdvertisingDataKind, handle: UInt8, _ host: isolated some AdvertisingSetDriver) async throws {
        switch kind {
        case .advertising:
            for piece in AdvertisingDataFragment.fragments(of: bytes, limit: AdvertisingDataFragment.extendedLimit) {
                try await host.commandReturning(.leSetExtendedAdvertisingData(handle: handle, piece))
            }
        case .scanResponse:
            for piece in AdvertisingDataFragment.fragments(of: bytes, limit: AdvertisingDataFragment.extendedLimit) {
                try await host.commandReturning(.leSetExtendedScanResponseData(handle: handle, piece))
            }
        case .periodic:
            for piece in AdvertisingDataFragment.fragments(of: bytes, limit: AdvertisingDataFragment.periodicLimit) {
                try await host.commandReturning(.leSetPeriodicAdvertisingData(handle: handle, piece))
            }
        }
    }

    /// Undoes a half-made set, as far as the controller lets it.
    private func remove(_ handle: UInt8, periodic: Bool, _ host: isolated some AdvertisingSetDriver) async {
        if periodic { _ = try? await host.commandReturning(.leSetPeriodicAdvertisingEnable(enable: false, handle: handle)) }
        do { try await host.commandReturning(.leRemoveAdvertisingSet(handle: handle)) } catch {
            host.log("removing advertising set \(handle) after a failed start: \(error)")
        }
    }

    /// The lowest handle free in 1 ... sets - 1, else 0 (`startAdvertising`'s) while that does not
    /// use it.
    private func freeHandle(sets: Int, _ host: isolated some AdvertisingSetDriver) -> UInt8? {
        let top = min(sets, 0xF0)
        if top > 1, let free = (1..<top).first(where: { records[UInt8($0)] == nil }) { return UInt8(free) }
        return records[0] == nil && !host.advertising.holdsSetZero ? 0 : nil
    }

    private func freeSID() throws(BLEError) -> UInt8 {
        let used = Set(records.values.map(\.set.sid))
        guard let free = (UInt8(0)...15).first(where: { !used.contains($0) }) else {
            throw .invalidArgument("all 16 advertising SIDs are in use; give one explicitly")
        }
        return free
    }

    /// Own_Address_Type and the set's random address, if any.
    private static func ownAddress(_ address: AdvertisingSetAddress, _ host: isolated some AdvertisingSetDriver) throws(BLEError) -> (OwnAddressType, BDAddress?) {
        switch address {
        case let .random(a):
            try checkRandom(a)
            return (.random, a)
        case .host:
            let type = host.ownAddressType
            let random = type == .random || type == .resolvableOrRandom ? host.ownRandomAddress : nil
            return (type, random)
        }
    }

    /// A set's own random address: static (11) or non-resolvable private (00), not all zeros or
    /// ones in the rest (Vol 6 Part B §1.3.2.1, §1.3.2.2).
    static func checkRandom(_ a: BDAddress) throws(BLEError) {
        let top = a.rawValue >> 46
        let rest = a.rawValue & 0x3FFF_FFFF_FFFF
        guard top == 0b11 || top == 0b00, rest != 0, rest != 0x3FFF_FFFF_FFFF else {
            throw .invalidArgument("\(a) is neither a static nor a non-resolvable random address")
        }
    }

    /// The checks §7.8.53–§7.8.56 and §7.8.61 make, made first with errors that say what to fix.
    static func check(_ p: AdvertisingSetParameters, data: [UInt8], scanResponse: [UInt8]?,
                      periodic: (parameters: PeriodicAdvertisingParameters, data: [UInt8])?, limit: Int, _ info: ControllerInfo) throws(BLEError) {
        guard data.count <= limit else {
            throw .invalidArgument("advertising data is \(data.count) octets; this set holds at most \(limit)")
        }
        if let scanResponse {
            guard p.isScannable || scanResponse.isEmpty else { throw .invalidArgument("a set that is not scannable has no scan response") }
            guard scanResponse.count <= limit else {
                throw .invalidArgument("scan response is \(scanResponse.count) octets; this set holds at most \(limit)")
            }
        }
        if p.isScannable, !p.legacyPDUs, scanResponse?.isEmpty ?? true {
            throw .invalidArgument("a scannable extended set needs a scan response (Vol 4 Part E §7.8.56)")
        }
        if p.kind == .scannable, !p.legacyPDUs, !data.isEmpty {
            throw .invalidArgument("a scannable extended set has no advertising data, only a scan response (Vol 4 Part E §7.8.54)")
        }
        let phys = info.supportedPHYs
        for phy in [p.primaryPHY, p.secondaryPHY] {
            if phy == .leCoded, !phys.contains(.leCoded) { throw .unsupported("the controller has no LE Coded PHY") }
            if phy == .le2M, !phys.contains(.le2M) { throw .unsupported("the controller has no LE 2M PHY") }
        }
        if let periodic {
            guard info.supportsPeriodicAdvertising else { throw .unsupported("the controller lists no periodic advertising commands") }
            guard !p.legacyPDUs, p.kind == .nonConnectable, !p.anonymous else {
                throw .invalidArgument("periodic advertising runs on an extended set that is neither connectable, scannable nor anonymous (Vol 4 Part E §7.8.61)")
            }
            guard periodic.data.count <= limit else {
                throw .invalidArgument("periodic data is \(periodic.data.count) octets; this set holds at most \(limit)")
            }
        }
    }
}

/// Which of a set's three data a command carries.
enum AdvertisingDataKind: Hashable, Sendable, CustomStringConvertible {
    case advertising, scanResponse, periodic

    var description: String {
        switch self {
        case .advertising: return "advertising data"
        case .scanResponse: return "scan response"
        case .periodic: return "periodic data"
        }
    }
}

/// What the advertising sets need of the host beyond advertising's own needs: the controller's
/// answers, the link table (a connection made from a set), and the sets themselves for their
/// restart tasks.
protocol AdvertisingSetDriver: AdvertisingDriver, LinkTableAccess {
    var advertisingSets: AdvertisingSetCoordinator { get }
    var info: ControllerInfo? { get }
    /// The address legacy-PDU or extended advertising from the host's address shows.
    var ownAdvertisingAddress: DeviceAddress { get }
}
