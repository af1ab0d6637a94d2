import BLECrypto
import BLEHCI
import BLEHost
import BLEWire

/// Privacy (Core spec Vol 3 Part C §10.7, Vol 6 Part B §1.3.2.2 and §6), both halves:
///
/// - our own resolvable private address, made from the local identity's IRK and renewed when
///   its lifetime ends (LE Set Random Address, which the controller refuses while advertising,
///   scanning or initiating: advertising and scanning pause for it, a connection attempt is
///   waited for);
/// - peers' RPAs resolved to the identity of their bond: by the host, with the IRKs of the bond
///   store, and by the controller's resolving list when it has one (loaded with every bonded
///   IRK in device privacy mode, so a bonded peer that advertises with its identity is still
///   heard, §7.8.77).
///
/// Isolated to the host actor that owns it, which it knows only as a `PrivacyDriver`.
final class PrivacyCoordinator {
    /// Our RPA's lifetime; nil when privacy is off.
    private(set) var rotation: Duration?
    /// When our RPA is due for renewal; while a due renewal waits (a connection attempt), the
    /// next try, a second on.
    private(set) var renewAt: Duration?
    /// The address's lifetime ended and it has not been replaced yet.
    private var renewalDue = false
    /// RPAs heard, with the identity each resolved to (nil: none of our bonds). Bounded.
    private var resolutions: [BDAddress: DeviceAddress?] = [:]
    /// The last RPA each bonded identity was heard with, and when.
    private var lastHeard: [DeviceAddress: (address: DeviceAddress, at: Duration)] = [:]
    /// Identities the controller's resolving list holds, with resolution on; empty otherwise.
    private(set) var controllerList: Set<DeviceAddress> = []
    /// The bonds changed since the controller's list was loaded.
    private var listStale = true
    /// The controller lacks a resolving list, or refused it: the host resolves alone.
    private var controllerUnusable = false
    /// A load of the resolving list is under way, and the radio starts waiting for it.
    private var syncing = false
    private var syncWaiters: [CheckedContinuation<Void, Never>] = []

    static let resolutionCacheLimit = 1024

    var nextDeadline: Duration? { renewAt }

    // MARK: - Our address

    /// Turns privacy on: a first RPA from `irk`, renewed every `rotation`.
    func start(rotation: Duration, irk: [UInt8], _ host: isolated some PrivacyDriver) async throws {
        guard rotation >= .seconds(1) else { throw BLEError.invalidArgument("the RPA lifetime must be at least a second, not \(rotation)") }
        self.rotation = rotation
        try await setNewAddress(irk: irk, host)
    }

    /// Privacy off: the caller sets the address it wants instead.
    func stop() {
        rotation = nil
        renewAt = nil
        renewalDue = false
    }

    private func setNewAddress(irk: [UInt8], _ host: isolated some PrivacyDriver) async throws {
        guard let rotation else { return }
        let address: BDAddress
        do {
            address = try ResolvablePrivateAddress.generate(irk: irk, random: try SecureRandom.bytes(count: 3))
        } catch {
            throw BLEError.security(.unavailable("making a resolvable private address: \(error)"))
        }
        try await host.commandReturning(.leSetRandomAddress(address))
        host.useRandomAddress(address)
        renewAt = host.now + rotation
        renewalDue = false
        host.rescheduleTimer()
    }

    /// The RPA's lifetime ended: renew it now if the radio allows, else try again a second on
    /// (and before the radio's next start).
    func expire(now: Duration, _ host: isolated some PrivacyDriver) {
        guard let renewAt, now >= renewAt else { return }
        renewalDue = true
        self.renewAt = now + .seconds(1)
        host.rescheduleTimer()
        host.spawn("renewing the resolvable private address") {
            await host.run { await $0.privacy.renewIdle($0) }
        }
    }

    /// Renews unless a connection attempt runs (it renews before the next one); advertising and
    /// scanning are paused around it, so a long scan or advertising run gets new addresses too.
    private func renewIdle(_ host: isolated some PrivacyDriver) async {
        guard renewalDue else { return }
        await whileRadioPaused(host) { await $0.privacy.renewIfDue($0) }
    }

    /// Runs `body` with advertising and scanning paused (not during a connection attempt,
    /// which must not be cut short: then nothing runs, and the caller tries again later).
    private func whileRadioPaused<Host: PrivacyDriver>(_ host: isolated Host, _ body: (isolated Host) async -> Void) async {
        guard !host.isInitiating else { return }
        // Always, advertising or not: nothing may turn advertising on during `body` (a restart,
        // a new set), and pauses nest.
        do { try await host.pauseAdvertising() } catch {
            host.log("pausing advertising for privacy: \(error)")
            return
        }
        await host.withScanPaused(body)
        await host.resumeAdvertising()
    }

    /// Before the radio starts scanning, initiating or advertising: a due RPA is renewed first.
    func renewIfDue(_ host: isolated some PrivacyDriver) async {
        guard renewalDue, let irk = host.localIRK else { return }
        do {
            try await setNewAddress(irk: irk, host)
            host.log("new resolvable private address \(host.ownRandomAddress.map { "\($0)" } ?? "?")")
        } catch {
            // Command Disallowed while the radio is busy: the next start tries again.
            host.log("renewing the resolvable private address: \(error)")
        }
    }

    // MARK: - Peers' addresses

    /// The bonded identity behind `address`: an identity the controller resolved (types 0x02,
    /// 0x03, or a listed identity with its own type, as rootcanal 1.10 reports a resolved RPA),
    /// a bonded device heard at its identity, or an RPA one of the bonds' IRKs resolves.
    /// Remembers an RPA as the identity's latest, for connecting by identity.
    func identity(of address: DeviceAddress, _ host: isolated some PrivacyDriver) -> DeviceAddress? {
        // No bond and no list: nobody to resolve to (what every scan of an unbonded host asks,
        // for every device it reports).
        if controllerList.isEmpty && host.bonds.isEmpty { return nil }
        switch address.type {
        case .publicIdentity, .randomIdentity:
            // Resolved by the controller's list; a bond removed since is no one's.
            return bondedIdentity(DeviceAddress(address.address, type: address.type.peerType), host)
        case .public:
            return bondedIdentity(address, host)
        case .random:
            guard address.address.randomKind == .resolvablePrivate else { return bondedIdentity(address, host) }
        }
        let identity: DeviceAddress?
        if let known = resolutions[address.address] {
            identity = known
        } else {
            identity = host.bonds.first { $0.resolvingKey != nil && $0.matches(address) }?.peer
            if resolutions.count >= Self.resolutionCacheLimit { resolutions = [:] }
            resolutions[address.address] = .some(identity)
        }
        if let identity {
            if lastHeard.count >= Self.resolutionCacheLimit && lastHeard[identity] == nil { lastHeard = [:] }
            lastHeard[identity] = (address, host.now)
        }
        return identity
    }

    /// An identity address that is a bonded device's own.
    private func bondedIdentity(_ address: DeviceAddress, _ host: isolated some PrivacyDriver) -> DeviceAddress? {
        if controllerList.contains(address) { return address }
        return host.bonds.first { $0.peer.sameDevice(as: address) }?.peer
    }

    /// The address to connect to for `peer`: an identity the controller's list holds, which the
    /// controller then finds behind its current RPA (Vol 6 Part B §6.4; given with its own type,
    /// 0x00/0x01, which rootcanal 1.10 matches where it does not match 0x02/0x03); an
    /// identity's RPA heard in the last `within`; otherwise `peer` as given.
    func connectionTarget(for peer: DeviceAddress, within: Duration, _ host: isolated some PrivacyDriver) -> DeviceAddress {
        let identity = DeviceAddress(peer.address, type: peer.type.peerType)
        if controllerList.contains(identity) || peer.type == .publicIdentity || peer.type == .randomIdentity { return identity }
        if let heard = lastHeard[identity], host.now - heard.at <= within { return heard.address }
        return peer
    }

    /// Whether finding `peer` on the air needs a scan first: a bonded identity with an IRK
    /// that neither the controller resolves nor was heard lately.
    func needsScan(toReach peer: DeviceAddress, within: Duration, _ host: isolated some PrivacyDriver) -> Bool {
        let target = connectionTarget(for: peer, within: within, host)
        guard target == peer, peer.type == .public || peer.type == .random else { return false }
        return host.bonds.contains { $0.peer.sameDevice(as: peer) && $0.resolvingKey != nil }
    }

    /// A bond was stored or removed: cached resolutions and the controller's list are stale.
    /// The list is reloaded now, pausing advertising or a scan for it, so a removed bond is not
    /// resolved one connection longer (a connection attempt reloads it before it starts).
    func bondsChanged(_ host: isolated some PrivacyDriver) {
        resolutions = [:]
        lastHeard = [:]
        listStale = true
        guard !controllerList.isEmpty || host.configuration.security.usesControllerAddressResolution, !controllerUnusable else { return }
        host.spawn("reloading the resolving list") {
            await host.run { host in
                guard host.privacy.listStale else { return }
                await host.privacy.whileRadioPaused(host) { await $0.privacy.syncResolvingList($0, radioPaused: true) }
            }
        }
    }

    // MARK: - The controller's resolving list

    /// Loads the controller's resolving list with the bonded IRKs and turns resolution on, if
    /// the list is stale and the controller has one. The radio must be idle (§7.8.38, §7.8.44):
    /// called before it starts scanning, initiating or advertising; when something still runs,
    /// the next start tries again.
    func syncResolvingList(_ host: isolated some PrivacyDriver, radioPaused: Bool = false) async {
        guard listStale, !controllerUnusable, host.configuration.security.usesControllerAddressResolution else { return }
        guard host.info?.resolvesAddressesInController == true else {
            controllerUnusable = true
            return
        }
        // One load at a time: a radio start waits for a load under way rather than start a
        // second one between its commands.
        if syncing {
            await withCheckedContinuation(isolation: host) { syncWaiters.append($0) }
            return
        }
        guard radioPaused || (!host.isAdvertising && !host.isScanning && !host.isInitiating) else { return }
        syncing = true
        defer {
            syncing = false
            let waiters = syncWaiters
            syncWaiters = []
            waiters.forEach { $0.resume() }
        }
        // Bonds that change during a load make it stale again: load until it is not.
        var loads = 0
        while listStale && loads < 4 {
            loads += 1
            listStale = false
            do {
                try await load(host)
            } catch {
                controllerList = []
                if case BLEError.hci(.commandFailed(_, .unknownCommand)) = error {
                    host.log("controller address resolution: \(error); the host resolves alone")
                    controllerUnusable = true
                } else {
                    // Refused for now (the radio was busy): the next radio start tries again.
                    host.log("loading the resolving list: \(error); tried again at the next radio start")
                    listStale = true
                }
                return
            }
        }
    }

    /// Address resolution off, the list cleared and loaded with every bonded IRK (as many as it
    /// holds; the host resolves the rest), in device privacy mode, and resolution on again.
    private func load(_ host: isolated some PrivacyDriver) async throws {
        let bonds = host.bonds.filter { $0.resolvingKey != nil }
        let localIRK = host.localIRK ?? [UInt8](repeating: 0, count: 16)
        if !controllerList.isEmpty || !bonds.isEmpty {
            try await host.commandReturning(.leSetAddressResolutionEnable(false))
            controllerList = []
            try await host.commandReturning(.leClearResolvingList)
        }
        guard !bonds.isEmpty else { return }
        var capacity = bonds.count
        if let size = host.info?.resolvingListSize { capacity = min(capacity, size) }
        var listed: Set<DeviceAddress> = []
        for bond in bonds.prefix(capacity) {
            guard let irk = bond.resolvingKey else { continue }
            let identity = DeviceAddress(bond.peer.address, type: bond.peer.type.peerType)
            try await host.commandReturning(.leAddDeviceToResolvingList(peer: identity, peerIRK: irk, localIRK: localIRK))
            try await host.commandReturning(.leSetPrivacyMode(peer: identity, device: true))
            listed.insert(identity)
        }
        try await host.commandReturning(.leSetAddressResolutionEnable(true))
        controllerList = listed
    }

    /// Before the radio starts: a due RPA is renewed and a stale resolving list reloaded.
    func prepareRadio(_ host: isolated some PrivacyDriver) async {
        await syncResolvingList(host)
        await renewIfDue(host)
    }
}

/// What privacy needs from the host beyond `HostServices`: itself (for its own tasks); what
/// the controller reported (its resolving list commands and LL Privacy); the bonds and the
/// local IRK (security); the own random address to use (set here, read by advertising, scanning
/// and connecting); and, since LE Set Random Address and the resolving list commands are refused
/// while the radio is busy (Vol 4 Part E §7.8.4, §7.8.38), whether advertising, scanning or a
/// connection attempt runs, and advertising and scanning paused around `body`.
protocol PrivacyDriver: HostServices {
    var privacy: PrivacyCoordinator { get }
    var info: ControllerInfo? { get }
    var bonds: [Bond] { get }
    var localIRK: [UInt8]? { get }
    /// From now on the own address is `address`, a random one.
    func useRandomAddress(_ address: BDAddress)
    var ownRandomAddress: BDAddress? { get }
    var isAdvertising: Bool { get }
    var isScanning: Bool { get }
    var isInitiating: Bool { get }
    func pauseAdvertising() async throws
    func resumeAdvertising() async
    /// Runs `body` with the scanner off, on again after it if a scan still runs.
    func withScanPaused(_ body: (isolated Self) async -> Void) async
}
