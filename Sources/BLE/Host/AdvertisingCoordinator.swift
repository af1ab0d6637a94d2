import BLEHCI
import BLEWire

/// The advertising the host last asked for, kept so it can restart after a connection starts or
/// ends, and the decisions about restarting it. Pure: no commands, no time.
struct AdvertisingState {
    var parameters: AdvertisingParameters
    var data: [UInt8]
    var scanResponse: [UInt8]
    /// Whether the controller is advertising now.
    var enabled: Bool
    /// Whether the application wants advertising (false after `stop`).
    var wanted: Bool
    /// Bumped by every start, stop and connection, so a restart scheduled before one of them
    /// does nothing after it.
    var generation: UInt64 = 0

    /// Whether advertising should be turned back on now: after a peripheral-role link starts
    /// (`continueWhileConnected`) or ends (`restartAfterDisconnect`). Legacy connectable
    /// advertising stops by itself when a connection is made (Vol 6 Part B §4.4.2.2).
    func wantsRestart(afterConnection: Bool) -> Bool {
        guard wanted, parameters.kind == .connectable, !enabled else { return false }
        return afterConnection ? parameters.continueWhileConnected : parameters.restartAfterDisconnect
    }

    /// A connection made from connectable advertising ended it on the controller.
    mutating func endedByConnection() {
        guard parameters.kind == .connectable else { return }
        enabled = false
        generation &+= 1
    }
}

/// Advertising (Vol 4 Part E §7.8.5–9): sets parameters and data, turns advertising on and off,
/// and turns it back on around connections when the application asked for that. With the
/// extended commands (`AdvertisingCommandSet`) the same legacy advertising goes out as
/// advertising set 0 with legacy PDUs (§7.8.53–§7.8.56), since a controller takes one command
/// set or the other (§3.1.1). Isolated to the host actor that owns it, which it knows only as an
/// `AdvertisingDriver`.
final class AdvertisingCoordinator {
    private(set) var state: AdvertisingState?
    /// Pauses under way (`pause`): a restart after a connection waits for their `resume`.
    private var paused = 0
    /// A start's enable is in flight: a pause turns it off too.
    private var enabling = false
    /// Counts `stop` calls: a start that sees it change while it sends its commands gives up.
    private var stops: UInt64 = 0
    /// Advertising a pause turned off, or whose restart fell in one: the last `resume` turns it
    /// on. Nothing else is turned on by a resume.
    private var offForPause = false
    /// `start`s under way: set 0 is theirs even before `state` says so.
    private var starting = 0
    /// With the extended commands: set 0 holds a scan response, which it keeps until replaced,
    /// even when it is given parameters that make it not scannable (which rootcanal refuses;
    /// the spec leaves that case unsaid, §7.8.53, §7.8.55).
    private var setHoldsScanResponse = false

    /// Whether the controller is advertising now.
    var isEnabled: Bool { state?.enabled ?? false }

    /// Whether this advertising holds set 0 (on, or to be turned back on).
    var holdsSetZero: Bool { starting > 0 || (state.map { $0.enabled || $0.wanted } ?? false) }

    /// An application's advertising set takes set 0: whatever it held for this advertising is
    /// to go (the caller removes the set). Returns whether this advertising ever configured it.
    func setZeroTakenBySets() -> Bool {
        setHoldsScanResponse = false
        return state != nil
    }

    /// Starts legacy advertising. The data and scan response must each fit 31 bytes (Vol 6 Part
    /// B §2.3.1.1); longer data is refused with a clear error.
    func start(_ parameters: AdvertisingParameters, data: AdvertisingData, scanResponse: AdvertisingData?,
               _ host: isolated some AdvertisingDriver) async throws {
        if let failure = host.failure { throw failure }
        if host.usesExtendedCommands, host.advertisingSetZeroInUse {
            throw BLEError.unsupported("the controller's one advertising set runs an advertising set started with startAdvertisingSet")
        }
        starting += 1
        defer { starting -= 1 }
        let stopsBefore = stops
        let advertisingBytes: [UInt8]
        let responseBytes: [UInt8]
        do {
            advertisingBytes = try data.encode(limit: AdvertisingData.legacyLimit)
            responseBytes = try scanResponse?.encode(limit: AdvertisingData.legacyLimit) ?? []
        } catch {
            throw BLEError.invalidArgument("advertising data: \(error)")
        }
        let (lo, hi) = try parameters.units()
        state?.generation &+= 1
        state?.wanted = false
        var mayStillAdvertise = false
        if state?.enabled == true {
            state?.enabled = false
            do {
                try await host.commandReturning(Self.enable(false, host))
            } catch {
                // The parameters below fail too if it is still on; say why then.
                host.log("LE Set Advertising Enable (off) before new parameters: \(error)")
                mayStillAdvertise = true
            }
        }
        await host.prepareRadioForAdvertising()
        if host.usesExtendedCommands {
            if setHoldsScanResponse && parameters.kind == .nonConnectable && !mayStillAdvertise {
                // Emptied while the set is still scannable, before it becomes one that is not
                // (never while it may still be advertising: the parameters then fail, and it would
                // go on without its scan response).
                try await host.commandReturning(.leSetExtendedScanResponseData(
                    handle: Self.setHandle, AdvertisingDataFragment(operation: .complete, bytes: [])))
                setHoldsScanResponse = false
            }
            try await host.commandReturning(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(
                handle: Self.setHandle, properties: Self.legacyProperties(parameters.kind), intervalMin: UInt32(lo), intervalMax: UInt32(hi),
                ownAddressType: host.ownAddressType)))
            try await host.commandReturning(.leSetExtendedAdvertisingData(
                handle: Self.setHandle, AdvertisingDataFragment(operation: .complete, bytes: advertisingBytes)))
            // A set that is not scannable takes no scan response (§7.8.55).
            if parameters.kind != .nonConnectable {
                try await host.commandReturning(.leSetExtendedScanResponseData(
                    handle: Self.setHandle, AdvertisingDataFragment(operation: .complete, bytes: responseBytes)))
                setHoldsScanResponse = !responseBytes.isEmpty
            }
        } else {
            try await host.commandReturning(.leSetAdvertisingParameters(intervalMin: lo, intervalMax: hi, type: parameters.kind.hciType, ownAddressType: host.ownAddressType))
            try await host.commandReturning(.leSetAdvertisingData(advertisingBytes))
            try await host.commandReturning(.leSetScanResponseData(responseBytes))
        }
        // Stopped while its parameters and data went out: it is not turned on.
        guard stops == stopsBefore else { throw CancellationError() }
        // The new advertising is in place before its enable, off until the controller confirms:
        // a connection that ends it while the enable is in flight (LE Advertising Set
        // Terminated, or the link on the legacy commands) is then this advertising's, and the
        // confirmation that follows does not turn it back on.
        let generation = (state?.generation ?? 0) &+ 1
        state = AdvertisingState(parameters: parameters, data: advertisingBytes, scanResponse: responseBytes, enabled: false, wanted: true,
                                 generation: generation)
        enabling = true
        defer { enabling = false }
        do {
            try await turnOn(host, generation: generation)
        } catch {
            if state?.generation == generation { state?.wanted = false }
            throw error
        }
        if state?.generation == generation { state?.enabled = true }
    }

    func stop(_ host: isolated some AdvertisingDriver) async throws {
        stops &+= 1
        guard var s = state else { return }
        s.enabled = false
        s.wanted = false
        s.generation &+= 1
        state = s
        try await host.commandReturning(Self.enable(false, host))
    }

    /// The advertising set the extended commands use for this advertising.
    static let setHandle: UInt8 = 0

    /// Advertising_Event_Properties of the legacy PDU for `kind` (Vol 4 Part E §7.8.53, table
    /// of legacy PDUs): ADV_IND, ADV_SCAN_IND or ADV_NONCONN_IND.
    static func legacyProperties(_ kind: AdvertisingParameters.Kind) -> AdvertisingEventProperties {
        switch kind {
        case .connectable: return [.legacy, .connectable, .scannable]
        case .scannable: return [.legacy, .scannable]
        case .nonConnectable: return [.legacy]
        }
    }

    /// LE Set Advertising Enable (§7.8.9), or LE Set Extended Advertising Enable (§7.8.56) for
    /// set `setHandle`.
    static func enable(_ on: Bool, _ host: isolated some AdvertisingDriver) -> HCICommand {
        guard host.usesExtendedCommands else { return .leSetAdvertisingEnable(enable: on) }
        return .leSetExtendedAdvertisingEnable(enable: on, sets: [AdvertisingSetEnable(handle: setHandle)])
    }

    /// Turns advertising on. With the extended commands a set advertising from a random address
    /// is given the host's random address first (LE Set Advertising Set Random Address, §7.8.52:
    /// a set's random address is its own, not the one LE Set Random Address gives), again at
    /// every start, since privacy may have renewed it while the set was off.
    /// With `generation`: not turned on when the state changed during the address command (a
    /// pause, a stop), whose own rules then say what happens.
    private func turnOn(_ host: isolated some AdvertisingDriver, generation: UInt64? = nil) async throws {
        if host.usesExtendedCommands, host.ownAddressType == .random || host.ownAddressType == .resolvableOrRandom,
           let address = host.ownRandomAddress {
            try await host.commandReturning(.leSetAdvertisingSetRandomAddress(handle: Self.setHandle, address: address))
            if let generation, state?.generation != generation { return }
        }
        try await host.commandReturning(Self.enable(true, host))
    }

    /// Turns advertising off for a moment (a new RPA, Vol 4 Part E §7.8.4); `resume` turns it
    /// back on unless the application stopped or restarted it meanwhile. Nested pauses count;
    /// nothing turns advertising on until the last ends.
    func pause(_ host: isolated some AdvertisingDriver) async throws {
        paused += 1
        // An enable in flight (a start's) is turned off too: the disable goes out after it.
        guard state?.enabled == true || enabling else { return }
        let wasOn = state?.enabled == true
        state?.enabled = false
        state?.generation &+= 1
        let generation = state?.generation
        do {
            try await host.commandReturning(Self.enable(false, host))
        } catch {
            paused -= 1
            if state?.generation == generation && wasOn { state?.enabled = true }
            // No resume will come for this pause: a restart it held back goes out now.
            await turnOnIfHeldBack(host)
            throw error
        }
        // Ended meanwhile (a connection): its own rules say whether it comes back.
        if state?.generation == generation { offForPause = true }
    }

    /// Ends a `pause`: advertising it turned off (or whose restart it held back) goes on again.
    func resume(_ host: isolated some AdvertisingDriver) async {
        guard paused > 0 else { return }
        paused -= 1
        await turnOnIfHeldBack(host)
    }

    /// Once no pause is under way: advertising a pause turned off, or whose restart one held
    /// back, goes on again.
    private func turnOnIfHeldBack(_ host: isolated some AdvertisingDriver) async {
        guard paused == 0, offForPause else { return }
        offForPause = false
        guard let s = state, s.wanted, !s.enabled else { return }
        state?.enabled = true
        do {
            try await turnOn(host)
        } catch {
            if state?.generation == s.generation { state?.enabled = false }
            host.log("advertising after a new RPA: \(error)")
            host.report(.advertisingFailed("\(error)"))
        }
    }

    /// LE Advertising Set Terminated for set 0 (Vol 4 Part E §7.7.65.18): a connection made from
    /// it (which may turn it back on), or its end for another reason.
    func setTerminated(_ event: LEAdvertisingSetTerminated, _ host: isolated some AdvertisingDriver) {
        guard state != nil else { return }
        if event.status.isSuccess {
            endedByConnection(host)
        } else {
            state?.enabled = false
            state?.generation &+= 1
            if state?.wanted == true { host.report(.advertisingFailed("advertising ended: \(event.status)")) }
        }
    }

    /// A central connected to our advertising; advertising may be turned back on.
    func endedByConnection(_ host: isolated some AdvertisingDriver) {
        state?.endedByConnection()
        restartIfWanted(afterConnection: true, host)
    }

    /// Advertises again after a peripheral-role link starts or ends, if the parameters ask for it.
    func restartIfWanted(afterConnection: Bool, _ host: isolated some AdvertisingDriver) {
        guard let s = state, s.wantsRestart(afterConnection: afterConnection) else { return }
        let generation = s.generation
        host.spawn("advertising restart") { await host.run { await $0.advertising.restart(generation: generation, $0) } }
    }

    private func restart(generation: UInt64, _ host: isolated some AdvertisingDriver) async {
        // Stopped, restarted or connected meanwhile: this restart is stale.
        guard let current = state, current.wanted, !current.enabled, current.generation == generation else { return }
        // Paused (privacy): the resume turns it on.
        guard paused == 0 else {
            offForPause = true
            return
        }
        await host.prepareRadioForAdvertising()
        guard let again = state, again.wanted, !again.enabled, again.generation == generation else { return }
        guard paused == 0 else {
            offForPause = true
            return
        }
        // On from here: a pause meanwhile turns it off again (its disable goes after the enable).
        state?.enabled = true
        do {
            try await turnOn(host)
            if state?.generation == generation { host.report(.advertisingStarted) }
        } catch {
            if state?.generation == generation { state?.enabled = false }
            host.log("advertising restart failed: \(error)")
            host.report(.advertisingFailed("\(error)"))
        }
    }
}

/// What advertising needs from the host beyond `HostServices`: itself (for its own tasks), of
/// privacy the radio made ready (an RPA renewed, the resolving list loaded) and the own address
/// type it leaves, and a way to tell the application (`PeripheralManagerEvent`) that advertising
/// restarted or failed to.
protocol AdvertisingDriver: HostServices {
    var advertising: AdvertisingCoordinator { get }
    /// Makes the radio ready to advertise; called with advertising off.
    func prepareRadioForAdvertising() async
    /// The own address type advertising goes out with (random once privacy set an RPA).
    var ownAddressType: OwnAddressType { get }
    /// The random address the host set (static, or privacy's RPA), if it set one.
    var ownRandomAddress: BDAddress? { get }
    /// Whether the controller is driven with the extended commands (`AdvertisingCommandSet`).
    var usesExtendedCommands: Bool { get }
    /// Whether an application's advertising set (`AdvertisingSetCoordinator`) holds set 0.
    var advertisingSetZeroInUse: Bool { get }
    /// Tells the application.
    func report(_ event: PeripheralManagerEvent)
}
