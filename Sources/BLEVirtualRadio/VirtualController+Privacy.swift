import BLECrypto
import BLEHCI
import BLEWire

/// Link-layer privacy (Core spec Vol 6 Part B §6): the resolving list of peers' identity
/// addresses and IRKs (Vol 4 Part E §7.8.38–§7.8.41), address resolution on and off (§7.8.44)
/// and the privacy mode of each entry (§7.8.77). With resolution on, a peer's resolvable private
/// address that one of the listed IRKs resolves is reported to the host as that peer's identity
/// (Address_Type 0x02 or 0x03), and LE Create Connection to an identity reaches the device
/// behind its current RPA. Own addresses stay the host's: it sets its RPA with LE Set Random
/// Address, and Own_Address_Type 0x02/0x03 falls back to the identity as with no local IRK.
extension VirtualController {
    /// One resolving list entry: a peer's identity and IRK, and ours for it (§7.8.38).
    public struct ResolvingListEntry: Hashable, Sendable {
        /// The peer's identity address, public or static random.
        public var identity: DeviceAddress
        /// The peer's IRK, least significant octet first; all zero when it has none.
        public var peerIRK: [UInt8]
        /// Our IRK for this peer, least significant octet first.
        public var localIRK: [UInt8]
        /// Device privacy mode (§7.8.77): the peer's identity address is accepted too. Network
        /// privacy mode, the default, accepts only its RPAs once it has an IRK.
        public var devicePrivacy = false

        var hasPeerIRK: Bool { peerIRK.contains { $0 != 0 } }
    }

    mutating func handlePrivacyCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .leReadResolvingListSize:
            out.event(complete(op, [UInt8(Int(configuration.resolvingListSize))]))
        case .leAddDeviceToResolvingList, .leRemoveDeviceFromResolvingList, .leClearResolvingList, .leSetPrivacyMode:
            var identity: DeviceAddress?
            if op != .leClearResolvingList {
                let type = try r.readU8()
                let address = BDAddress(littleEndian: try r.readBytes(6))
                guard type <= 1 else {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    return out
                }
                identity = DeviceAddress(address, type: type == 0 ? .public : .random)
            }
            // §7.8.38–§7.8.40, §7.8.77: not while resolution is on and the list may be in use.
            guard !(addressResolutionEnabled && (isAdvertising || anySetEnabled || isScanning || initiation != nil)) else {
                out.event(complete(op, status: .commandDisallowed))
                return out
            }
            switch op {
            case .leAddDeviceToResolvingList:
                guard let identity else { break }
                let peerIRK = try r.readBytes(16)
                let localIRK = try r.readBytes(16)
                // §7.8.38: an identity already listed is an error.
                guard !resolvingList.contains(where: { $0.identity == identity }) else {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    return out
                }
                guard resolvingList.count < Int(configuration.resolvingListSize) else {
                    out.event(complete(op, status: .memoryCapacityExceeded))
                    return out
                }
                resolvingList.append(ResolvingListEntry(identity: identity, peerIRK: peerIRK, localIRK: localIRK))
            case .leRemoveDeviceFromResolvingList:
                guard let i = resolvingList.firstIndex(where: { $0.identity == identity }) else {
                    out.event(complete(op, status: .unknownConnectionIdentifier))
                    return out
                }
                resolvingList.remove(at: i)
            case .leSetPrivacyMode:
                let mode = try r.readU8()
                guard mode <= 1 else {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    return out
                }
                guard let i = resolvingList.firstIndex(where: { $0.identity == identity }) else {
                    out.event(complete(op, status: .unknownConnectionIdentifier))
                    return out
                }
                resolvingList[i].devicePrivacy = mode == 1
            default:
                resolvingList = []
            }
            out.event(complete(op))
        case .leSetAddressResolutionEnable:
            let enable = try r.readU8()
            guard enable <= 1 else {
                out.event(complete(op, status: .invalidHCICommandParameters))
                return out
            }
            // §7.8.44: not while advertising, scanning or initiating.
            if isAdvertising || anySetEnabled || isScanning || initiation != nil {
                out.event(complete(op, status: .commandDisallowed))
            } else {
                addressResolutionEnabled = enable == 1
                out.event(complete(op))
            }
        case .leSetResolvablePrivateAddressTimeout:
            let seconds = try r.readU16()
            out.event(complete(op, status: (0x0001...0x0E10).contains(seconds) ? .success : .invalidHCICommandParameters))
        default:
            return nil
        }
        return out
    }

    /// What the link layer makes of `address` heard on the air (Vol 6 Part B §6.2–§6.4): the
    /// listed identity its RPA resolves to; nil when the address is taken as it is; `.ignored`
    /// when an entry in network privacy mode forbids its identity address on the air.
    func resolution(of address: DeviceAddress) -> AddressResolution {
        guard addressResolutionEnabled else { return .asIs }
        if address.type.peerType == .random, address.address.randomKind == .resolvablePrivate {
            for entry in resolvingList where entry.hasPeerIRK && Self.resolves(address.address, irk: entry.peerIRK) {
                return .resolved(entry.identity)
            }
            return .asIs
        }
        if let entry = resolvingList.first(where: { $0.identity == address.withPeerType }), entry.hasPeerIRK, !entry.devicePrivacy {
            return .ignored
        }
        return .asIs
    }

    /// Whether an advertiser at `address` is the device `target` names (an identity type, or a
    /// listed identity), resolving its RPA when address resolution is on (§7.8.12).
    func matches(_ address: DeviceAddress, target: DeviceAddress) -> Bool {
        switch resolution(of: address) {
        case .ignored:
            return false
        case let .resolved(identity):
            return identity.address == target.address && identity.type == target.type.peerType
        case .asIs:
            // An identity type names only a resolved RPA (§7.8.12 Peer_Address_Type 0x02/0x03).
            guard target.type == .public || target.type == .random else { return false }
            return address.address == target.address && address.type.peerType == target.type
        }
    }

    /// The address to report for `address` heard on the air: the identity, typed 0x02/0x03,
    /// when it resolved; the RPA it resolved from, if so.
    func reported(_ address: DeviceAddress) -> (address: DeviceAddress, rpa: BDAddress?)? {
        switch resolution(of: address) {
        case .ignored: return nil
        case .asIs: return (address, nil)
        case let .resolved(identity):
            return (DeviceAddress(identity.address, type: identity.type == .public ? .publicIdentity : .randomIdentity), address.address)
        }
    }

    /// ah(IRK, prand) = hash (Vol 3 Part H §2.2.2), over the address's two halves.
    static func resolves(_ address: BDAddress, irk: [UInt8]) -> Bool {
        let msb = Array(address.littleEndianBytes.reversed())
        guard let hash = try? SMPCrypto.ah(k: Array(irk.reversed()), r: Array(msb[0..<3])) else { return false }
        return hash == Array(msb[3..<6])
    }
}

/// The link layer's view of a heard address (Vol 6 Part B §6).
enum AddressResolution: Equatable {
    /// Used as it is: resolution is off, or no entry applies.
    case asIs
    /// An RPA that resolves to this listed identity.
    case resolved(DeviceAddress)
    /// An identity address a network-privacy entry does not accept on the air.
    case ignored
}
