import BLEHCI
import BLEWire

/// Bluetooth 5's advertising sets (Core spec Vol 4 Part E §7.8.52–§7.8.63, Vol 6 Part B §4.4.2):
/// several advertisements at once, each with its own parameters, address and data, extended
/// PDUs carrying up to the controller's maximum (up to 1,650 octets), the LE Coded PHY, and
/// periodic advertising. They need a controller the host drives with the extended commands
/// (`AdvertisingCommandSet.extendedWhenSupported`, the default); elsewhere every call throws
/// `.unsupported`. `startAdvertising` keeps set 0.
extension PeripheralManager {
    /// How many sets the controller runs at once and how many octets of data each holds, or nil
    /// when the host does not drive it with the extended commands.
    public var advertisingSetCapacity: (sets: Int, maximumDataLength: Int)? {
        get async {
            await host.run { host in
                guard host.usesExtendedCommands, let info = host.info else { return nil }
                return (info.advertisingSets ?? 1, info.maximumAdvertisingDataLength ?? AdvertisingDataFragment.extendedLimit)
            }
        }
    }

    /// Starts a new advertising set. `scanResponse` is for a scannable set (which, with
    /// extended PDUs, needs one); `periodic` adds periodic advertising with its data (on a
    /// non-connectable, non-scannable extended set). Data longer than one command is sent in
    /// fragments (§7.8.54). Parameters the spec forbids, data over the set's limit, or a
    /// PHY the controller lacks are refused with `.invalidArgument` or `.unsupported` before
    /// anything is sent; a scannable extended set carries only its scan response (`data` must be
    /// empty). What only the controller knows is its error at the enable: connectable extended
    /// data longer than one AUX_ADV_IND holds, say (§7.8.56).
    public func startAdvertisingSet(_ data: AdvertisingData, scanResponse: AdvertisingData? = nil,
                                    parameters: AdvertisingSetParameters = AdvertisingSetParameters(),
                                    periodic: (parameters: PeriodicAdvertisingParameters, data: AdvertisingData)? = nil) async throws -> AdvertisingSet {
        let bytes = try Self.bytes(data), response = try scanResponse.map(Self.bytes)
        let periodicBytes = try periodic.map { (parameters: $0.parameters, data: try Self.bytes($0.data)) }
        return try await host.run { host in
            try await host.advertisingSets.start(parameters, data: bytes, scanResponse: response, periodic: periodicBytes, host)
        }
    }

    /// Replaces a running set's advertising data; the set keeps advertising (off for a moment
    /// when the data takes more than one command, §7.8.54).
    public func updateAdvertisingData(_ data: AdvertisingData, of set: AdvertisingSet) async throws {
        let bytes = try Self.bytes(data)
        try await host.run { try await $0.advertisingSets.update(set.handle, .advertising, bytes, $0) }
    }

    /// Replaces a scannable set's scan response.
    public func updateScanResponse(_ data: AdvertisingData, of set: AdvertisingSet) async throws {
        let bytes = try Self.bytes(data)
        try await host.run { try await $0.advertisingSets.update(set.handle, .scanResponse, bytes, $0) }
    }

    /// Replaces the periodic data of a set started with `periodic` (§7.8.62).
    public func updatePeriodicData(_ data: AdvertisingData, of set: AdvertisingSet) async throws {
        let bytes = try Self.bytes(data)
        try await host.run { try await $0.advertisingSets.update(set.handle, .periodic, bytes, $0) }
    }

    /// Stops a set and removes it from the controller (§7.8.56, §7.8.59); the other sets go on.
    public func stopAdvertisingSet(_ set: AdvertisingSet) async throws {
        try await host.run { try await $0.advertisingSets.stop(set.handle, $0) }
    }

    /// The sets running now (started and not stopped; a set that ended by itself stays until
    /// `stopAdvertisingSet`), in handle order.
    public var advertisingSets: [AdvertisingSet] {
        get async { await host.run { $0.advertisingSets.records.values.filter { !$0.starting }.map(\.set).sorted { $0.handle < $1.handle } } }
    }

    /// AD structures as octets, any length (the set checks it against its limit).
    private static func bytes(_ data: AdvertisingData) throws -> [UInt8] {
        do { return try data.encode(limit: Int.max) } catch { throw BLEError.invalidArgument("advertising data: \(error)") }
    }
}
