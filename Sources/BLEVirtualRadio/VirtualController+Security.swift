import BLECrypto
import BLEHCI
import BLEWire

/// The controller's security commands and the Filter Accept List. Encryption: LE Encrypt and LE
/// Rand (Core spec Vol 4 Part E §7.8.22, §7.8.23), LE Enable Encryption and the Long Term Key
/// Request replies (§7.8.24–§7.8.26), whose exchange between the two ends (Vol 6 Part B §5.1.3,
/// the encryption start procedure) the medium carries. Filter Accept List: §7.8.14–§7.8.17.
extension VirtualController {
    mutating func handleSecurityOrListCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .leEncrypt:
            // HCI carries key and plaintext least significant octet first; AES-128 (FIPS-197)
            // takes them most significant first.
            let key = try r.readBytes(16)
            let plaintext = try r.readBytes(16)
            guard let cipher = try? AES128.encrypt(key: Array(key.reversed()), block: Array(plaintext.reversed())) else {
                out.event(complete(op, status: .unspecifiedError))
                break
            }
            out.event(complete(op, Array(cipher.reversed())))
        case .leRand:
            // Deterministic per controller (seeded from its address), so runs in virtual time
            // repeat exactly. Not for keys that protect anything real.
            var w = ByteWriter()
            w.u64(random.next())
            out.event(complete(op, w.bytes))
        case .leEnableEncryption:
            let handle = try r.readU16() & 0x0FFF
            let rand = try r.readU64()
            let ediv = try r.readU16()
            let key = try r.readBytes(16)
            guard let c = connections[handle] else {
                out.event(status(op, .unknownConnectionIdentifier))
                break
            }
            // §7.8.24: only the central starts encryption.
            guard c.role == .central else {
                out.event(status(op, .commandDisallowed))
                break
            }
            out.event(status(op, .success))
            out.air.append(.startEncryption(handle: handle, randomNumber: rand, encryptedDiversifier: ediv, longTermKey: key))
        case .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply:
            let handle = try r.readU16() & 0x0FFF
            let key = op == .leLongTermKeyRequestReply ? try r.readBytes(16) : nil
            guard connections[handle]?.awaitingLongTermKey == true else {
                out.event(complete(op, handle: handle, status: connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed))
                break
            }
            connections[handle]?.awaitingLongTermKey = false
            out.event(complete(op, handle: handle))
            out.air.append(.longTermKeyReply(handle: handle, longTermKey: key))
        case .leReadFilterAcceptListSize:
            out.event(complete(op, [UInt8(Int(configuration.filterAcceptListSize))]))
        case .leClearFilterAcceptList, .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList:
            var entry: DeviceAddress?
            if op != .leClearFilterAcceptList {
                let type = try r.readU8()
                let address = BDAddress(littleEndian: try r.readBytes(6))
                guard type <= 1 else {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    break
                }
                entry = DeviceAddress(address, type: type == 0 ? .public : .random)
            }
            // §7.8.14: the list may not change while any filter policy in use refers to it.
            guard !filterAcceptListInUse else {
                out.event(complete(op, status: .commandDisallowed))
                break
            }
            switch op {
            case .leClearFilterAcceptList:
                filterAcceptList = []
            case .leAddDeviceToFilterAcceptList:
                guard let entry else { break }
                guard filterAcceptList.count < Int(configuration.filterAcceptListSize) || filterAcceptList.contains(entry) else {
                    out.event(complete(op, status: .memoryCapacityExceeded))
                    return out
                }
                filterAcceptList.insert(entry)
            default:
                if let entry { filterAcceptList.remove(entry) }
            }
            out.event(complete(op))
        default:
            return nil
        }
        return out
    }

    /// Whether advertising, scanning or initiating currently uses the Filter Accept List.
    var filterAcceptListInUse: Bool {
        (isAdvertising && advertisingFilterPolicy != 0) || (isScanning && scanFilterPolicy & 0x01 != 0)
            || (initiation != nil && initiation?.peer == nil)
    }
}
