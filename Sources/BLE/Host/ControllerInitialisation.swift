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
        do {
            _ = try await host.commandReturning(.reset)
        } catch BLEError.hci(.commandTimeout(opcode: .reset)) {
            // A controller that loses the first command after power-on (VirtualControllerQuirk
            // `losesFirstCommand`; BTstack resends HCI Reset the same way): one more try, after
            // which a controller that stays silent fails the initialisation.
            host.log("HCI Reset: no answer within the command timeout; sending it once more")
            _ = try await host.commandReturning(.reset)
        }

        let version = await capability("Read Local Version Information", host) {
            try LocalVersionInformation(returnParameters: try await $0.commandReturning(.readLocalVersionInformation))
        }
        let commands = await capability("Read Local Supported Commands", host) {
            try LocalSupportedCommands(returnParameters: try await $0.commandReturning(.readLocalSupportedCommands))
        }
        // Every later command is sent only when the controller lists it (or gave no list).
        func listed(_ opcode: HCIOpcode) -> Bool { commands?.lists(opcode) ?? true }
        let features = !listed(.readLocalSupportedFeatures) ? nil : await capability("Read Local Supported Features", host) {
            try LocalSupportedFeatures(returnParameters: try await $0.commandReturning(.readLocalSupportedFeatures))
        }
        // A controller without a public address (or without the read) is driven with random
        // addresses only; §7.4.6 gives zero for "none".
        let address = !listed(.readBDADDR) ? nil : await capability("Read BD_ADDR", host) {
            try BDAddressReturn(returnParameters: try await $0.commandReturning(.readBDADDR)).address
        }

        var info = ControllerInfo(address: address ?? BDAddress(rawValue: 0), version: version, supportedCommands: commands, features: features,
                                  leFeatures: nil, aclBufferLength: 0, aclBufferCount: 0)
        try await readBuffers(into: &info, host)

        // Set Event Mask is in every controller's list; one that refuses it keeps its reset
        // default (§7.3.1), which has every event but LE Meta.
        if listed(.setEventMask) {
            _ = await capability("Set Event Mask", host) { try await $0.commandReturning(.setEventMask(EventMask.default)) }
        }
        let extended = info.usesExtendedCommands(host.configuration.advertisingCommands)
        let leMask = leEventMask(extended: extended, commands).intersection(.defined(byHCIVersion: version?.hciVersion))
        if listed(.leSetEventMask) {
            _ = await capability("LE Set Event Mask", host) { try await $0.commandReturning(.leSetEventMask(leMask)) }
        }
        info.leFeatures = !listed(.leReadLocalSupportedFeatures) ? nil : await capability("LE Read Local Supported Features", host) {
            try LESupportedFeatures(returnParameters: try await $0.commandReturning(.leReadLocalSupportedFeatures))
        }
        await readLimits(into: &info, host)
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
            if commands?.leReadPeriodicAdvertiserListSize == true {
                info.periodicAdvertiserListSize = await capability("LE Read Periodic Advertiser List Size", host) {
                    Int(try LEPeriodicAdvertiserListSize(returnParameters: try await $0.commandReturning(.leReadPeriodicAdvertiserListSize)).size)
                }
            }
        }
        return info
    }

    /// The ACL data buffers (Vol 4 Part E §4.1.1): LE Read Buffer Size v2 when the controller
    /// lists it, else v1; when the LE buffers are 0 (or the read fails), the ones the
    /// controller shares with BR/EDR (Read Buffer Size, §7.4.5, §7.8.2). Read Buffer Size is
    /// also read when listed, for what `ble info` shows of the BR/EDR buffers.
    private static func readBuffers(into info: inout ControllerInfo, _ host: isolated some HostServices) async throws {
        var length = 0, count = 0
        if info.supportedCommands?.leReadBufferSizeV2 == true,
           let v2 = await capability("LE Read Buffer Size v2", host, { try LEBufferSizeV2(returnParameters: try await $0.commandReturning(.leReadBufferSizeV2)) }) {
            (length, count) = (Int(v2.aclDataPacketLength), Int(v2.totalNumACLDataPackets))
            if v2.isoDataPacketLength > 0 && v2.totalNumISODataPackets > 0 {
                info.isoBuffers = (Int(v2.isoDataPacketLength), Int(v2.totalNumISODataPackets))
            }
        }
        // v1 is in every LE controller (§7.8.2); one that does not list it is still asked when
        // nothing else could give the buffers.
        if length == 0 || count == 0, info.lists(.leReadBufferSizeV1) || !info.lists(.readBufferSize),
           let v1 = await capability("LE Read Buffer Size", host, { try LEBufferSizeV1(returnParameters: try await $0.commandReturning(.leReadBufferSizeV1)) }) {
            (length, count) = (Int(v1.aclDataPacketLength), Int(v1.totalNumACLDataPackets))
        }
        let needShared = length == 0 || count == 0
        if needShared || info.lists(.readBufferSize),
           let shared = await capability("Read Buffer Size", host, { try BufferSize(returnParameters: try await $0.commandReturning(.readBufferSize)) }),
           shared.aclDataPacketLength > 0, shared.totalNumACLDataPackets > 0 {
            info.brEdrACLBuffers = (Int(shared.aclDataPacketLength), Int(shared.totalNumACLDataPackets))
            if needShared {
                (length, count) = (Int(shared.aclDataPacketLength), Int(shared.totalNumACLDataPackets))
                info.aclBuffersShared = true
            }
        }
        guard length > 0, count > 0 else {
            throw BLEError.unsupported("the controller reports no ACL data buffers")
        }
        (info.aclBufferLength, info.aclBufferCount) = (length, count)
    }

    /// The sizes of the controller's lists and the longest data PDU (§7.8.14, §7.8.41,
    /// §7.8.46), each read only when the controller lists its command.
    private static func readLimits(into info: inout ControllerInfo, _ host: isolated some HostServices) async {
        let commands = info.supportedCommands
        if commands?.leReadFilterAcceptListSize == true {
            info.filterAcceptListSize = await capability("LE Read Filter Accept List Size", host) {
                Int(try LEFilterAcceptListSize(returnParameters: try await $0.commandReturning(.leReadFilterAcceptListSize)).size)
            }
        }
        if commands?.leReadResolvingListSize == true {
            info.resolvingListSize = await capability("LE Read Resolving List Size", host) {
                Int(try LEResolvingListSize(returnParameters: try await $0.commandReturning(.leReadResolvingListSize)).size)
            }
        }
        if commands?.leReadMaximumDataLength == true, info.leFeatures?.contains(.leDataPacketLengthExtension) == true {
            info.maximumDataLength = await capability("LE Read Maximum Data Length", host) {
                try LEMaximumDataLength(returnParameters: try await $0.commandReturning(.leReadMaximumDataLength))
            }
        }
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
