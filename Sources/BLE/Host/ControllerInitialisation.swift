import BLEHCI
import BLEWire

/// The initialisation sequence of Core spec Vol 4 Part E §4 and Vol 6 Part D §2 (the LE
/// controller set-up message sequence): Reset, then reads of version, commands, features,
/// address and buffer sizes, then the event masks. Commands a controller does not know
/// ("Unknown HCI Command", 0x01) are taken as capability answers, not failures. It needs only
/// commands and the log (`HostServices`); the driver applies what it returns (the ACL buffers
/// to the flow controller, the info to the parts).
enum ControllerInitialisation {
    static func run(_ host: isolated some HostServices) async throws -> ControllerInfo {
        _ = try await host.commandReturning(.reset)

        let version = await capability("Read Local Version Information", host) {
            try LocalVersionInformation(returnParameters: try await $0.commandReturning(.readLocalVersionInformation))
        }
        let commands = await capability("Read Local Supported Commands", host) {
            try LocalSupportedCommands(returnParameters: try await $0.commandReturning(.readLocalSupportedCommands))
        }
        let features = await capability("Read Local Supported Features", host) {
            try LocalSupportedFeatures(returnParameters: try await $0.commandReturning(.readLocalSupportedFeatures))
        }
        let address = try BDAddressReturn(returnParameters: try await host.commandReturning(.readBDADDR)).address

        // LE Read Buffer Size v2 when the controller lists it, else v1; an LE length of 0 means the
        // controller shares its BR/EDR ACL buffers (Vol 4 Part E §7.8.2).
        var length = 0, count = 0
        if commands?.leReadBufferSizeV2 == true,
           let v2 = await capability("LE Read Buffer Size v2", host, { try LEBufferSizeV2(returnParameters: try await $0.commandReturning(.leReadBufferSizeV2)) }) {
            length = Int(v2.aclDataPacketLength)
            count = Int(v2.totalNumACLDataPackets)
        }
        if length == 0 {
            let v1 = try LEBufferSizeV1(returnParameters: try await host.commandReturning(.leReadBufferSizeV1))
            length = Int(v1.aclDataPacketLength)
            count = Int(v1.totalNumACLDataPackets)
        }
        if length == 0 || count == 0 {
            let shared = try BufferSize(returnParameters: try await host.commandReturning(.readBufferSize))
            length = Int(shared.aclDataPacketLength)
            count = Int(shared.totalNumACLDataPackets)
        }
        guard length > 0, count > 0 else {
            throw BLEError.unsupported("the controller reports no ACL data buffers")
        }

        _ = try await host.commandReturning(.setEventMask(EventMask.default))
        var info = ControllerInfo(address: address, version: version, supportedCommands: commands, features: features,
                                  leFeatures: nil, aclBufferLength: length, aclBufferCount: count)
        let extended = info.usesExtendedCommands(host.configuration.advertisingCommands)
        _ = try await host.commandReturning(.leSetEventMask(leEventMask(extended: extended, commands)))
        info.leFeatures = await capability("LE Read Local Supported Features", host) {
            try LESupportedFeatures(returnParameters: try await $0.commandReturning(.leReadLocalSupportedFeatures))
        }
        // What advertising sets can hold, asked only of a controller the host drives with the
        // extended commands (these two are among them, §3.1.1).
        if extended {
            info.advertisingSets = await capability("LE Read Number of Supported Advertising Sets", host) {
                Int(try LESupportedAdvertisingSets(returnParameters: try await $0.commandReturning(.leReadNumberOfSupportedAdvertisingSets)).count)
            } ?? 1
            info.maximumAdvertisingDataLength = commands?.leReadMaximumAdvertisingDataLength == true
                ? await capability("LE Read Maximum Advertising Data Length", host) {
                    Int(try LEMaximumAdvertisingDataLength(returnParameters: try await $0.commandReturning(.leReadMaximumAdvertisingDataLength)).length)
                } ?? AdvertisingDataFragment.extendedLimit
                : AdvertisingDataFragment.extendedLimit
        }
        return info
    }

    /// The LE events asked for: the default ones, LE Channel Selection Algorithm (§7.7.65.20) from
    /// a Bluetooth 5 controller, and with the extended commands the ones only they bring: LE
    /// Advertising Set Terminated
    /// (§7.7.65.18), and the periodic sync events (§7.7.65.14–16, §7.7.65.24) when the
    /// controller lists the commands that start a sync.
    static func leEventMask(extended: Bool, _ commands: LocalSupportedCommands?) -> LEEventMask {
        var mask = LEEventMask.default
        // A controller with Bluetooth 5's connecting command reports the algorithm of every
        // link, whichever command set made it.
        if commands?.leExtendedCreateConnection == true { mask.insert(.channelSelectionAlgorithm) }
        guard extended else { return mask }
        mask.insert(.advertisingSetTerminated)
        if commands?.lePeriodicAdvertisingCreateSync == true {
            mask.formUnion([.periodicAdvertisingSyncEstablished, .periodicAdvertisingReport, .periodicAdvertisingSyncLost])
        }
        if commands?.leSetPeriodicAdvertisingSyncTransferParameters == true || commands?.leSetDefaultPeriodicAdvertisingSyncTransferParameters == true {
            mask.insert(.periodicAdvertisingSyncTransferReceived)
        }
        return mask
    }

    /// A read whose failure means "this controller does not say" (an unknown command, a
    /// malformed answer): the answer is nil and the reason goes to the diagnostics log. A lost
    /// transport still fails the initialisation at the next required command.
    private static func capability<T, Host: HostServices>(_ what: String, _ host: isolated Host,
                                                          _ read: (isolated Host) async throws -> T) async -> T? {
        do {
            return try await read(host)
        } catch {
            host.log("\(what): \(error); taken as not supported")
            return nil
        }
    }
}
