import BLEHCI
import BLEHost
import BLEWire

/// How a characteristic value is written (CoreBluetooth's `CBCharacteristicWriteType`).
public enum WriteType: Sendable {
    /// Write Request, or prepared writes when the value is longer than one PDU (Vol 3 Part G §4.9.3–4).
    case withResponse
    /// Write Command: no acknowledgement from the peer (Vol 3 Part G §4.9.1).
    case withoutResponse
    /// Signed Write Without Response (Vol 3 Part G §4.9.2): on an unencrypted link, a Signed
    /// Write Command the bonded peer can check came from us, signed with the CSRK we gave it in
    /// pairing and the bond's SignCounter (stored one higher before it is sent); on an
    /// encrypted link, a plain Write Command, as §4.9.2 says. Needs a bond with the peer in
    /// which we distributed our CSRK; at most ATT_MTU − 15 bytes.
    case signedWithoutResponse
}

/// A connected remote device, as the central sees it: CoreBluetooth's `CBPeripheral`, async.
/// Every operation ends with its result, a typed `BLEError`, or cancellation.
public final class Peripheral: Sendable, CustomStringConvertible {
    /// The peripheral's address and its type, as the connection was made to it.
    public let address: DeviceAddress
    let host: HostController
    let linkID: UInt64
    let observation: LinkObservation

    init(host: HostController, link: LinkHandle) {
        self.host = host
        self.address = link.peer
        self.linkID = link.id
        self.observation = link.observation
    }

    /// A readable form for logs, e.g. `Peripheral(C0:11:22:33:44:55/random)`.
    public var description: String { "Peripheral(\(address))" }

    // MARK: State

    /// The connection's state now; `stateUpdates` streams its changes.
    public var state: ConnectionState { observation.snapshot.state }

    /// The HCI reason of the disconnect, once the link is down.
    public var disconnectReason: HCIStatus? {
        if case let .disconnected(reason) = state { return reason }
        return nil
    }

    /// Every connection-state change, starting with the current state; ends after the disconnect.
    public var stateUpdates: AsyncStream<ConnectionState> { observation.stateUpdates() }

    /// The link's connection parameters in controller units (Core spec Vol 4 Part E §7.8.12:
    /// interval × 1.25 ms, supervision timeout × 10 ms), as of the last connection or update event.
    public var connectionParameters: LinkParameters { observation.snapshot.parameters }

    /// The current ATT_MTU of this link.
    public var mtu: Int { observation.snapshot.mtu }

    /// The link's PHY: LE 1M until a PHY update, or, on a host driving the extended commands,
    /// what LE Read PHY said once the link was made (a link made on the LE Coded PHY starts on
    /// it; Core spec Vol 4 Part E §7.8.47).
    public var phy: LEPHY { observation.snapshot.phy }

    /// The channel selection algorithm the link hops with, 1 or 2 (Vol 6 Part B §4.5.8), as the
    /// controller's LE Channel Selection Algorithm event said (Vol 4 Part E §7.7.65.20); nil
    /// when it sent none (a controller before Bluetooth 5).
    public var channelSelectionAlgorithm: Int? { observation.snapshot.channelSelectionAlgorithm }

    /// Why the last pairing on this link ended without keys, nil while none has. Covers the
    /// pairings the peripheral starts with a Security Request, which no call here waits for:
    /// e.g. `.existingBondKept` when one would have replaced this device's bond with an
    /// unauthenticated key (`SecuritySettings.allowsUnauthenticatedBondReplacement`).
    public var lastPairingFailure: SMPPairingError? { observation.snapshot.lastPairingFailure }

    /// The link-layer payload each way, in octets (27 until a data length update).
    public var dataLength: (tx: Int, rx: Int) {
        let s = observation.snapshot
        return (s.maxTxOctets, s.maxRxOctets)
    }

    /// Asks the controller for LL payloads of `octets` (27...251) towards this peripheral
    /// (LE Set Data Length, Core spec Vol 4 Part E §7.8.33). `dataLength` changes when the
    /// procedure completes.
    public func setDataLength(_ octets: Int) async throws {
        try await host.run { [linkID] in try await $0.connections.setDataLength(linkID: linkID, octets: octets, $0) }
    }

    /// Asks for a PHY on this link (LE Set PHY, §7.8.49). `phy` changes when the PHY Update
    /// procedure completes; the peer may keep the current one.
    public func setPHY(_ phy: LEPHY) async throws {
        try await host.run { [linkID] in try await $0.connections.setPHY(linkID: linkID, phy, $0) }
    }

    /// The longest value one write can carry: ATT_MTU − 3 without response, ATT_MTU − 15 signed
    /// (the 12-octet signature; the limit holds on an encrypted link too, where a plain command
    /// goes); with response, prepared writes allow the longest attribute value, 512 bytes
    /// (Vol 3 Part F §3.2.9).
    public func maximumWriteValueLength(for type: WriteType) -> Int {
        switch type {
        case .withoutResponse: return mtu - 3
        case .signedWithoutResponse: return SignedWriteWithoutResponse.maximumValueLength(mtu: mtu)
        case .withResponse: return 512
        }
    }

    /// Disconnects with a reason (default Remote User Terminated Connection) and waits until
    /// the controller reports the link down.
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection) async throws {
        try await host.run { [linkID] in try await $0.connections.disconnect(linkID: linkID, reason: reason, $0) }
    }

    /// Waits until every write sent on this link has left the host and the controller has
    /// reported it transmitted (or `limit` passes): call before disconnecting right after
    /// writes without response, which the controller may otherwise flush.
    public func flush(limit: Duration = .seconds(2)) async {
        await host.run { [linkID] in await $0.client.drain(linkID: linkID, limit: limit, $0) }
    }

    // MARK: Procedures

    /// Every GATT request goes through here, so each one raises security on demand (`securely`).
    func run(_ procedure: some GATTProcedure) async throws -> GATTOutput {
        let erased = AnyGATTProcedure(procedure)
        return try await securely {
            try await host.run { [linkID] in try await $0.client.perform(erased, onLink: linkID, $0) }
        }
    }

    /// Exchanges the ATT MTU (Vol 3 Part G §4.3.1), asking for `preferred` (default 517).
    @discardableResult
    public func exchangeMTU(_ preferred: Int? = nil) async throws -> Int {
        let ask = preferred ?? host.configuration.preferredATTMTU
        guard case let .mtu(m) = try await run(ExchangeMTUProcedure(clientMTU: ask)) else { throw unexpected("MTU exchange") }
        return m
    }

    /// The services discovered so far on this link, like `CBPeripheral.services`. A Service
    /// Changed indication removes the ones it covers (see `servicesChanged()`).
    public var services: [GATTService] { observation.snapshot.services }

    /// Discovers primary services, all of them or those with the given UUIDs (Vol 3 Part G §4.4).
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws -> [GATTService] {
        var found: [GATTService] = []
        if let uuids, !uuids.isEmpty {
            for uuid in uuids {
                guard case let .services(s) = try await run(DiscoverPrimaryServiceByUUIDProcedure(uuid: uuid)) else { throw unexpected("service discovery") }
                found += s
            }
            found.sort { $0.startHandle < $1.startHandle }
        } else {
            guard case let .services(s) = try await run(DiscoverAllPrimaryServicesProcedure()) else { throw unexpected("service discovery") }
            found = s
        }
        showServices(found)
        return found
    }

    /// Adds `discovered` to `services`, replacing those that start at the same handle.
    func showServices(_ discovered: [GATTService]) {
        observation.update { snapshot in
            let others = snapshot.services.filter { old in !discovered.contains { $0.startHandle == old.startHandle } }
            snapshot.services = (others + discovered).sorted { $0.startHandle < $1.startHandle }
        }
    }

    /// Records `service` as the one whose characteristics were discovered, for finding one of
    /// them again after a change (Peripheral+DatabaseChange.swift); not when a change reached it
    /// meanwhile, since its range may then be another's.
    private func showCharacteristicService(_ service: GATTService, unlessChangedSince count: Int) {
        observation.update { snapshot in
            guard !snapshot.changes(since: count).contains(where: { $0.overlaps(service.handleRange) }) else { return }
            snapshot.characteristicServices.removeAll { $0.startHandle == service.startHandle }
            snapshot.characteristicServices.append(service)
            snapshot.characteristicServices.sort { $0.startHandle < $1.startHandle }
        }
    }

    /// Finds the services a service includes (Vol 3 Part G §4.5).
    public func discoverIncludedServices(for service: GATTService) async throws -> [GATTIncludedService] {
        guard case let .includedServices(s) = try await run(FindIncludedServicesProcedure(range: service.startHandle...service.endHandle)) else { throw unexpected("included-service discovery") }
        return s
    }

    /// Discovers a service's characteristics, all or those with the given UUIDs (Vol 3 Part G §4.6).
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: GATTService) async throws -> [GATTCharacteristic] {
        let changesBefore = observation.snapshot.databaseChanges
        guard case let .characteristics(all) = try await run(DiscoverCharacteristicsProcedure(range: service.startHandle...service.endHandle, uuid: nil)) else { throw unexpected("characteristic discovery") }
        showCharacteristicService(service, unlessChangedSince: changesBefore)
        if service.uuid == GATTUUID.genericAttributeService {
            for c in all where c.uuid == GATTUUID.serviceChanged {
                await subscribeToServiceChanged(c)
            }
        }
        guard let uuids, !uuids.isEmpty else { return all }
        return all.filter { uuids.contains($0.uuid) }
    }

    /// Discovers a characteristic's descriptors (Vol 3 Part G §4.7.1).
    public func discoverDescriptors(for characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        guard characteristic.valueHandle < characteristic.endHandle else { return [] }
        guard case let .descriptors(d) = try await run(DiscoverDescriptorsProcedure(range: (characteristic.valueHandle + 1)...characteristic.endHandle)) else { throw unexpected("descriptor discovery") }
        return d
    }

    /// Reads a value by handle, whole: Read, then Read Blob while the value fills the PDU
    /// (Vol 3 Part G §4.8.1, §4.8.3).
    public func readValue(handle: UInt16) async throws -> [UInt8] {
        guard case let .value(v) = try await run(ReadLongProcedure(handle: handle)) else { throw unexpected("read") }
        return v
    }

    /// Reads a characteristic's whole value at its value handle (see `readValue(handle:)`). When
    /// the server's database changes under the read (Service Changed covering it, or Database
    /// Out Of Sync), the characteristic is found again and read once more; a second change
    /// throws `BLEError.gatt(.databaseChanged)` (see Peripheral+DatabaseChange.swift).
    public func readValue(for characteristic: GATTCharacteristic) async throws -> [UInt8] {
        try await readValueAndCharacteristic(for: characteristic).value
    }

    /// `readValue(for:)`, with the characteristic the value was read from: `characteristic`, or
    /// the one found again after a change of the server's database.
    public func readValueAndCharacteristic(for characteristic: GATTCharacteristic) async throws
        -> (value: [UInt8], characteristic: GATTCharacteristic) {
        try await acrossDatabaseChange(of: characteristic) { c in (try await readValue(handle: c.valueHandle), c) }
    }

    /// Reads a descriptor's whole value at its handle (see `readValue(handle:)`).
    public func readValue(for descriptor: GATTDescriptor) async throws -> [UInt8] {
        try await readValue(handle: descriptor.handle)
    }

    /// One Read Request only, without the Read Blob continuation (Vol 3 Part G §4.8.1).
    public func readShortValue(handle: UInt16) async throws -> [UInt8] {
        guard case let .value(v) = try await run(ReadProcedure(handle: handle)) else { throw unexpected("read") }
        return v
    }

    /// Reads every characteristic value of a type within a range (Vol 3 Part G §4.8.2).
    public func readValues(ofType uuid: BluetoothUUID, in range: ClosedRange<UInt16> = 0x0001...0xFFFF) async throws -> [ATTHandleValue] {
        guard case let .handleValues(v) = try await run(ReadByUUIDProcedure(uuid: uuid, range: range)) else { throw unexpected("read by type") }
        return v
    }

    /// Reads several values in one request (Vol 3 Part G §4.8.4); the peer returns them concatenated.
    public func readMultiple(handles: [UInt16]) async throws -> [UInt8] {
        guard case let .value(v) = try await run(ReadMultipleProcedure(handles: handles)) else { throw unexpected("read multiple") }
        return v
    }

    /// Reads several variable-length values in one request, each separately (Vol 3 Part G §4.8.5).
    public func readMultipleVariable(handles: [UInt16]) async throws -> [[UInt8]] {
        guard case let .values(v) = try await run(ReadMultipleVariableProcedure(handles: handles)) else { throw unexpected("read multiple variable") }
        return v
    }

    /// Writes a value. With response, a value longer than ATT_MTU − 3 of the bearer the write
    /// runs on goes as a long write (prepared writes then execute; cancelled if any step fails). Without response, it must
    /// fit in one Write Command; signed, in one Signed Write Command (ATT_MTU − 15), and the
    /// peer must be bonded with our CSRK (else `BLEError.security(.unavailable)`, nothing sent).
    /// By handle the characteristic's properties are not known: `writeValue(_:for:type:)`
    /// checks that it takes signed writes.
    public func writeValue(_ value: [UInt8], handle: UInt16, type: WriteType = .withResponse) async throws {
        switch type {
        case .signedWithoutResponse:
            let limit = maximumWriteValueLength(for: .signedWithoutResponse)
            guard value.count <= limit else {
                throw BLEError.invalidArgument("\(value.count) bytes do not fit one signed write without response (max \(limit))")
            }
            try await host.run { [linkID] in try await $0.client.signedWriteWithoutResponse(handle: handle, value: value, onLink: linkID, $0) }
        case .withoutResponse:
            guard value.count <= mtu - 3 else {
                throw BLEError.invalidArgument("\(value.count) bytes do not fit one write without response (max \(mtu - 3))")
            }
            try await host.run { [linkID] in try await $0.client.writeWithoutResponse(handle: handle, value: value, onLink: linkID, $0) }
        case .withResponse:
            guard value.count <= 512 else { throw BLEError.invalidArgument("attribute values are at most 512 bytes (got \(value.count))") }
            // Write Request or long write, chosen from the ATT_MTU of the bearer it runs on
            // (an Enhanced ATT bearer's may be smaller than `mtu`, Vol 3 Part F §3.2.8).
            _ = try await run(WriteValueProcedure(handle: handle, value: value))
        }
    }

    /// Writes a characteristic's value at its value handle; lengths and write types as for
    /// `writeValue(_:handle:type:)`. A signed write needs the characteristic's Authenticated
    /// Signed Writes property (Vol 3 Part G §3.3.1.1, §4.9.2), else `BLEError.invalidArgument`.
    /// A write with response under which the server's database changes (Service Changed
    /// covering it, or Database Out Of Sync) is sent once more to the characteristic found
    /// again, never blindly to its old handle; a second change throws
    /// `BLEError.gatt(.databaseChanged)` (see Peripheral+DatabaseChange.swift). Returns the
    /// characteristic written: `characteristic`, or the one found again.
    @discardableResult
    public func writeValue(_ value: [UInt8], for characteristic: GATTCharacteristic, type: WriteType = .withResponse) async throws -> GATTCharacteristic {
        if type == .signedWithoutResponse, !characteristic.properties.contains(.authenticatedSignedWrites) {
            throw BLEError.invalidArgument("characteristic \(characteristic.uuid) does not take signed writes (no Authenticated Signed Writes property)")
        }
        // A command has no answer to distrust: it goes at once, to the handle as known.
        guard type == .withResponse else {
            try await writeValue(value, handle: characteristic.valueHandle, type: type)
            return characteristic
        }
        return try await acrossDatabaseChange(of: characteristic) { c in
            try await writeValue(value, handle: c.valueHandle, type: .withResponse)
            return c
        }
    }

    /// Writes a descriptor's value, always with response as descriptor writes are made
    /// (Vol 3 Part G §4.12.3); a value longer than ATT_MTU − 3 goes as a long write.
    public func writeValue(_ value: [UInt8], for descriptor: GATTDescriptor) async throws {
        try await writeValue(value, handle: descriptor.handle, type: .withResponse)
    }

    /// Writes several values atomically with verified echoes (Reliable Writes, Vol 3 Part G §4.9.5).
    public func reliableWrite(_ writes: [(handle: UInt16, value: [UInt8])]) async throws {
        _ = try await run(ReliableWriteProcedure(writes: writes.map { ($0.handle, $0.value) }))
    }

    // MARK: Notifications

    /// Values notified or indicated on this characteristic, from now until the link goes down or
    /// the consumer stops. Indications are confirmed by the stack as they arrive.
    public func notifications(for characteristic: GATTCharacteristic) async -> NotificationStream {
        await host.run { [linkID] in $0.client.notificationStream(valueHandle: characteristic.valueHandle, onLink: linkID, $0) }
    }

    /// Like `notifications(for:)`, by value handle: for a characteristic whose handle is known
    /// without discovering it.
    public func notifications(valueHandle: UInt16) async -> NotificationStream {
        await host.run { [linkID] in $0.client.notificationStream(valueHandle: valueHandle, onLink: linkID, $0) }
    }

    /// Turns notifications (or indications, when the characteristic only indicates) on or off by
    /// writing the Client Characteristic Configuration descriptor (Vol 3 Part G §3.3.3.3, §4.12.3).
    public func setNotifyValue(_ enabled: Bool, for characteristic: GATTCharacteristic, cccdHandle: UInt16? = nil) async throws {
        let cccd: UInt16
        if let cccdHandle {
            cccd = cccdHandle
        } else {
            cccd = try characteristic.clientConfiguration(in: try await discoverDescriptors(for: characteristic)).handle
        }
        let bits: UInt16 = try enabled ? characteristic.updateBits() : 0
        _ = try await run(WriteProcedure(handle: cccd, value: [UInt8(bits & 0xFF), UInt8(bits >> 8)]))
    }

    /// Service Changed indications (Vol 3 Part G §7.1): each yields the affected handle range,
    /// after which discovered handles in it are stale. Active once the GATT service's
    /// characteristics have been discovered.
    public func servicesChanged() async -> AsyncStream<ClosedRange<UInt16>> {
        await host.run { [linkID] in $0.client.servicesChangedStream(onLink: linkID, $0) }
    }

    /// A server indicates Service Changed only to clients that enabled it (Vol 3 Part G §7.1),
    /// and without bonding nothing is remembered between connections: so the stack enables it
    /// itself, once per link, the first time the GATT service's characteristics are discovered.
    /// A peer that refuses leaves discovery unaffected.
    private func subscribeToServiceChanged(_ characteristic: GATTCharacteristic) async {
        let linkID = self.linkID
        let firstTime = await host.run { $0.client.noteServiceChangedHandle(characteristic.valueHandle, onLink: linkID, $0) }
        guard firstTime else { return }
        guard characteristic.properties.contains(.indicate) else { return }
        do {
            let descriptors = try await discoverDescriptors(for: characteristic)
            guard let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else { return }
            _ = try await run(WriteProcedure(handle: cccd.handle, value: [0x02, 0x00]))
        } catch {
            HostDiagnostics.log("[host] enabling Service Changed indications on \(address): \(error)")
        }
    }

    private func unexpected(_ what: String) -> BLEError {
        .unsupported("internal: unexpected output for \(what)")
    }
}

extension GATTCharacteristic {
    /// The Client Characteristic Configuration bits that turn its updates on: notifications
    /// (0x0001), else indications (0x0002) when it only indicates (Vol 3 Part G §3.3.3.3).
    func updateBits() throws -> UInt16 {
        if properties.contains(.notify) { return 0x0001 }
        if properties.contains(.indicate) { return 0x0002 }
        throw BLEError.invalidArgument("characteristic \(uuid) neither notifies nor indicates")
    }

    /// Its Client Characteristic Configuration descriptor among `descriptors` (its own).
    func clientConfiguration(in descriptors: [GATTDescriptor]) throws -> GATTDescriptor {
        guard let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else {
            throw BLEError.invalidArgument("characteristic \(uuid) has no Client Characteristic Configuration descriptor")
        }
        return cccd
    }
}
