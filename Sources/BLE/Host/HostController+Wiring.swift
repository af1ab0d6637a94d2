import BLEHCI
import BLEHost

// The driver wires the parts together: each part declares what it needs of the host in its own
// protocol, and here (with what the driver owns itself in its other files) those needs are met
// from the other parts, and what a part tells the others is routed, each in one stated order
// (docs/ARCHITECTURE.md, "What a part may see of the host", draws the graph and the routes).

extension HostController: ScanDriver {
    func prepareRadioForScanning() async { await privacy.prepareRadio(self) }
    func identity(of address: DeviceAddress) -> DeviceAddress? { privacy.identity(of: address, self) }
}

extension HostController: AdvertisingDriver {
    func prepareRadioForAdvertising() async { await privacy.prepareRadio(self) }
    var ownAddressType: OwnAddressType { ownAddress.type }
    func report(_ event: PeripheralManagerEvent) { server.emit(event) }
    var advertisingSetZeroInUse: Bool { advertisingSets.holdsSetZero }
}

extension HostController: AdvertisingSetDriver {
    var ownAdvertisingAddress: DeviceAddress {
        if ownAddress.type != .public, let random = ownAddress.random { return DeviceAddress(random, type: .random) }
        return DeviceAddress(info?.address ?? .zero, type: .public)
    }

    /// LE Advertising Set Terminated (Vol 4 Part E §7.7.65.18): for one of the application's sets,
    /// or else for set 0 of `startAdvertising` (with the extended commands, the connection that
    /// ended it is known only from this event, which follows the connection's).
    func advertisingSetTerminated(_ event: LEAdvertisingSetTerminated) {
        guard !advertisingSets.terminated(event, self), event.advertisingHandle == AdvertisingCoordinator.setHandle else { return }
        advertising.setTerminated(event, self)
    }
}

extension HostController: PrivacyDriver {
    var bonds: [Bond] { security.bonds(self) }
    var localIRK: [UInt8]? { security.localIRK(self) }
    func useRandomAddress(_ address: BDAddress) {
        ownAddress.type = .random
        ownAddress.random = address
    }
    var ownRandomAddress: BDAddress? { ownAddress.random }
    var isAdvertising: Bool { advertising.isEnabled || advertisingSets.isEnabled }
    var isScanning: Bool { scanning.isRadioEnabled }
    var isInitiating: Bool { connections.isInitiating }
    /// Every set off: the one of `startAdvertising`, then the application's (if those fail, the
    /// first comes back on and the pause fails as a whole).
    func pauseAdvertising() async throws {
        try await advertising.pause(self)
        do { try await advertisingSets.pause(self) } catch {
            await advertising.resume(self)
            throw error
        }
    }
    func resumeAdvertising() async {
        await advertising.resume(self)
        await advertisingSets.resume(self)
    }
    func withScanPaused(_ body: (isolated HostController) async -> Void) async { await scanning.withRadioPaused(self, body) }
}

extension HostController: GATTCacheDriver {
    func peer(ofLink linkID: UInt64) -> DeviceAddress? {
        connections.links.handle(forID: linkID).flatMap { connections.links[$0]?.peer }
    }
    func serverFeatures(readFrom peer: DeviceAddress) -> [UInt8]? { client.enhancedSetups.serverFeatures[peer] }
}

extension HostController: LinkTableAccess {
    func withLink<R>(_ handle: UInt16, _ body: (inout Link) -> R) -> R? { connections.links.withLink(handle, body) }
    func readLink<R>(_ handle: UInt16, _ body: (borrowing Link) -> R) -> R? { connections.links.read(handle, body) }
    func link(_ handle: UInt16) -> Link? { connections.links[handle] }
    func linkHandle(forID id: UInt64) -> UInt16? { connections.links.handle(forID: id) }
    var linkHandles: [UInt16] { connections.links.handles }
    func hasLink(_ handle: UInt16) -> Bool { connections.links.contains(handle) }
}

extension HostController: GATTServerDriver {
    func queuedACLPDUs(handle: UInt16) -> Int { aclFlow.queuedPDUsInPlace(handle: handle) }
    func disconnectInBackground(handle: UInt16, _ why: String) { connections.disconnectInBackground(handle: handle, why, self) }
    func closeATTBearer(handle: UInt16, cid: UInt16) { l2cap.closeATTBearer(handle: handle, cid: cid, self) }
    func bond(for peer: DeviceAddress) -> Bond? { security.bond(for: peer, self) }
    func store(_ bond: Bond, replacing: Bool) -> Bool { security.store(bond, replacing: replacing, self) }
    func peerSigningKey(from peer: DeviceAddress) -> ATTPeerSigningKey? { security.peerSigningKey(from: peer, self) }
    func acceptPeerSignCounter(_ counter: UInt32, from peer: DeviceAddress) -> Bool { security.acceptPeerSignCounter(counter, from: peer, self) }
}

extension HostController: ConnectionDriver {
    func requestParametersOverL2CAP(handle: UInt16, _ parameters: LESignalingCommand.ConnectionParameters) -> Bool {
        guard let actions = router.requestConnectionParameterUpdate(handle: handle, parameters) else { return false }
        connections.perform(actions, handle: handle, self)
        return true
    }

    func prepareRadioForConnecting() async { await privacy.prepareRadio(self) }

    /// A link is up: the L2CAP router, the Security Manager part and the GATT server (a bonded
    /// client's state) learn of it, in that order; a peripheral-role link also ends legacy
    /// connectable advertising (which may restart) and reaches the manager's events.
    func linkOpened(_ link: Link) {
        router.linkOpened(handle: link.handle, role: link.role == .central ? .central : .peripheral)
        security.linkOpened(handle: link.handle, self)
        server.bondedClientConnected(handle: link.handle, self)
        if link.role == .peripheral {
            // With the extended commands the set a connection came from is told by LE
            // Advertising Set Terminated, which follows (`advertisingSetTerminated`).
            if !usesExtendedCommands { advertising.endedByConnection(self) }
            server.emit(.connected(link.central))
            advertisingSets.linkOpened(handle: link.handle, self)
        }
    }

    /// A link's ATT timers ran out: each side performs what its machines said, then the
    /// Enhanced ATT bearers' own timers (Vol 3 Part F §3.3.3).
    func linkTimersExpired(handle: UInt16, client clientActions: ATTBearerSetActions, server serverActions: [ServerAction], now: Duration) {
        client.perform(clientActions, handle: handle, self)
        server.perform(serverActions, handle: handle, self)
        client.expireEnhancedBearers(handle: handle, now: now, self)
        server.expireEnhancedBearers(handle: handle, now: now, self)
    }

    func channelEvent(_ event: CreditBasedChannelEvent, handle: UInt16) { l2cap.handle(event, handle: handle, self) }
}

extension HostController: SecurityDriver {
    var ownIdentityAddress: DeviceAddress? { ownAddress.identity }
    func bondsChanged() { privacy.bondsChanged(self) }
    func forgetBondedClient(_ identity: DeviceAddress) { server.forgetBondedClient(identity) }

    /// A link is encrypted: the GATT client may open Enhanced ATT bearers (they need an
    /// encrypted link, Vol 3 Part G §5.3.1), then, with a bond's key, the GATT server restores
    /// that client's CCCDs, features and change awareness (unless the connection did).
    func linkEncrypted(handle: UInt16, bondIdentity: DeviceAddress?) {
        client.linkEncrypted(handle: handle, self)
        if let bondIdentity { server.bondedClientReturned(handle: handle, identity: bondIdentity, self) }
    }
}

extension HostController: GATTClientDriver {
    func openATTBearers(linkID: UInt64, count: Int) async throws -> [ATTBearerID] {
        try await l2cap.openATTBearers(linkID: linkID, count: count, parameters: enhancedATTChannelParameters, self)
    }
    func serverReceives(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) { server.receive(pdu, handle: handle, bearer: bearer, self) }
    func serverFeaturesRead(_ features: [UInt8], linkID: UInt64) { caches.update(linkID: linkID, self) { $0.serverFeatures = features } }
    func cachedServerFeatures(linkID: UInt64) -> [UInt8]? { caches.entry(linkID: linkID)?.cache.serverFeatures }
    func servicesChanged(_ range: ClosedRange<UInt16>, linkID: UInt64) { caches.servicesChanged(range, linkID: linkID, self) }
    func databaseOutOfSync(linkID: UInt64) { caches.outOfSync(linkID: linkID, self) }
    func takeLocalSignCounter(towards peer: DeviceAddress) throws(BLEError) -> (key: [UInt8], counter: UInt32) {
        try security.takeLocalSignCounter(towards: peer, self)
    }
}

extension HostController: L2CAPDriver {
    func performSignaling(_ actions: [L2CAPControlAction], handle: UInt16) { connections.perform(actions, handle: handle, self) }
    func makeChannel(id: UInt64, info: CreditBasedChannelInfo, peer: DeviceAddress) -> LECreditBasedChannel {
        LECreditBasedChannel(host: self, id: id, info: info, peer: peer)
    }
}

extension HostController: PeriodicSyncDriver {}
