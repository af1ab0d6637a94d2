import BLEHCI
import BLEWire

extension HostController {
    /// The initialisation sequence of Core spec Vol 4 Part E §4 and Vol 6 Part D §2 (the LE
    /// controller set-up message sequence). Commands a controller does not know ("Unknown HCI
    /// Command", 0x01) are taken as capability answers, not failures.
    func initialiseController() async throws -> ControllerInfo {
        _ = try await commandReturning(.reset)

        let version = try? LocalVersionInformation(returnParameters: try await commandReturning(.readLocalVersionInformation))
        let commands = try? LocalSupportedCommands(returnParameters: try await commandReturning(.readLocalSupportedCommands))
        let features = try? LocalSupportedFeatures(returnParameters: try await commandReturning(.readLocalSupportedFeatures))
        let address = try BDAddressReturn(returnParameters: try await commandReturning(.readBDADDR)).address

        // LE Read Buffer Size v2 when the controller lists it, else v1; an LE length of 0 means the
        // controller shares its BR/EDR ACL buffers (Vol 4 Part E §7.8.2).
        var length = 0, count = 0
        if commands?.leReadBufferSizeV2 == true,
           let v2 = try? LEBufferSizeV2(returnParameters: try await commandReturning(.leReadBufferSizeV2)) {
            length = Int(v2.aclDataPacketLength)
            count = Int(v2.totalNumACLDataPackets)
        }
        if length == 0 {
            let v1 = try LEBufferSizeV1(returnParameters: try await commandReturning(.leReadBufferSizeV1))
            length = Int(v1.aclDataPacketLength)
            count = Int(v1.totalNumACLDataPackets)
        }
        if length == 0 || count == 0 {
            let shared = try BufferSize(returnParameters: try await commandReturning(.readBufferSize))
            length = Int(shared.aclDataPacketLength)
            count = Int(shared.totalNumACLDataPackets)
        }
        guard length > 0, count > 0 else {
            throw BLEError.unsupported("the controller reports no ACL data buffers")
        }
        aclFlow = ACLFlowController(bufferCount: count, bufferLength: length)

        _ = try await commandReturning(.setEventMask(EventMask.default))
        _ = try await commandReturning(.leSetEventMask(LEEventMask.default))
        let leFeatures = try? LESupportedFeatures(returnParameters: try await commandReturning(.leReadLocalSupportedFeatures))

        let info = ControllerInfo(
            address: address, version: version, supportedCommands: commands, features: features,
            leFeatures: leFeatures, aclBufferLength: length, aclBufferCount: count)
        self.info = info
        return info
    }
}
