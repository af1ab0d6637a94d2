import BLE
import BLESystems
import BLEWire

/// What `ble info` prints of a `ControllerInfo`: the controller's own answers, decoded, and the
/// stack's choices from them, as text or one JSON object.
struct ControllerReport {
    var info: ControllerInfo
    var configuration: HostConfiguration
    var spec: String?

    // MARK: Facts

    var versionLines: [(String, String)] {
        guard let v = info.version else { return [("HCI version", "unknown (Read Local Version Information failed)")] }
        return [
            ("HCI version", "\(Self.coreName(v.hciVersion)) (0x\(hex(v.hciVersion))), revision 0x\(hex(v.hciSubversion))"),
            ("LMP version", "\(Self.coreName(v.lmpVersion)) (0x\(hex(v.lmpVersion))), subversion 0x\(hex(v.lmpSubversion))"),
            ("Manufacturer", "\(manufacturer(v.companyIdentifier)) (0x\(hex(v.companyIdentifier)))"),
        ]
    }

    /// The Bluetooth name of an HCI/LMP version number (Assigned Numbers, Core Specification
    /// Versions).
    static func coreName(_ version: UInt8) -> String {
        let names: [UInt8: String] = [0: "1.0b", 1: "1.1", 2: "1.2", 3: "2.0+EDR", 4: "2.1+EDR", 5: "3.0+HS", 6: "4.0", 7: "4.1",
                                      8: "4.2", 9: "5.0", 10: "5.1", 11: "5.2", 12: "5.3", 13: "5.4", 14: "6.0", 15: "6.1"]
        return names[version].map { "Bluetooth \($0)" } ?? "unknown"
    }

    func manufacturer(_ id: UInt16) -> String {
        if id == 0xFFFF { return "none: reserved for testing" }
        return AssignedNumbers.companyName(id) ?? "unknown company"
    }

    var addressText: String {
        info.address.rawValue == 0 ? "none (00:00:00:00:00:00: random addresses only)" : info.address.description
    }

    var leFeatureNames: [(bit: Int, name: String)] { info.leFeatures?.namedBits ?? [] }

    var lmpFeatureText: String {
        guard let f = info.features else { return "unknown" }
        var names: [String] = []
        if f.contains(.leSupportedController) { names.append("LE Supported (Controller)") }
        if f.contains(.brEdrNotSupported) { names.append("BR/EDR Not Supported") }
        if f.contains(.simultaneousLEAndBREDR) { names.append("Simultaneous LE and BR/EDR") }
        if f.contains(.secureSimplePairing) { names.append("Secure Simple Pairing") }
        if f.contains(.encryption) { names.append("Encryption") }
        return "0x" + hex(f.rawValue) + (names.isEmpty ? "" : ": " + names.joined(separator: ", "))
    }

    /// Supported commands per command group: (group, supported, assigned).
    var commandGroups: [(group: String, supported: Int, assigned: Int)] {
        var order: [String] = []
        var counts: [String: (Int, Int)] = [:]
        for bit in SupportedCommandBit.all {
            let group = bit.groupName
            if counts[group] == nil { order.append(group) }
            let listed = info.supportedCommands?.supports(octet: bit.octet, bit: bit.bit) == true
            counts[group, default: (0, 0)].0 += listed ? 1 : 0
            counts[group, default: (0, 0)].1 += 1
        }
        return order.map { ($0, counts[$0]?.0 ?? 0, counts[$0]?.1 ?? 0) }
    }

    var supportedCommandNames: [String] {
        SupportedCommandBit.all.filter { info.supportedCommands?.supports(octet: $0.octet, bit: $0.bit) == true }.map(\.name)
    }

    var bufferLines: [(String, String)] {
        var lines = [("LE ACL", "\(info.aclBufferLength) octets × \(info.aclBufferCount)" + (info.aclBuffersShared ? " (shared with BR/EDR: LE Read Buffer Size reports none)" : ""))]
        lines.append(("ACL (BR/EDR)", info.aclBuffersShared ? "the same" : info.brEdrACLBuffers.map { "\($0.length) octets × \($0.count)" } ?? "none"))
        lines.append(("ISO", info.isoBuffers.map { "\($0.length) octets × \($0.count)" } ?? "none"))
        return lines
    }

    func optionalCount(_ value: Int?) -> String { value.map(String.init) ?? "not reported" }

    var dataLengthText: String {
        guard info.supportsDataLengthExtension else { return "27 octets (no Data Length Extension)" }
        guard let m = info.maximumDataLength else { return "Data Length Extension (maximum not reported)" }
        return "tx \(m.supportedMaxTxOctets) octets / \(m.supportedMaxTxTime) µs, rx \(m.supportedMaxRxOctets) octets / \(m.supportedMaxRxTime) µs"
    }

    var phyNames: [String] {
        let phys = info.supportedPHYs
        return [(LEPHYSet.le1M, "LE 1M"), (.le2M, "LE 2M"), (.leCoded, "LE Coded")].filter { phys.contains($0.0) }.map(\.1)
    }

    var phyText: String { phyNames.joined(separator: ", ") }

    // MARK: Choices

    /// The stack's choices, as `label: choice` pairs.
    var choices: [(String, String)] {
        let extended = info.usesExtendedCommands(configuration.advertisingCommands)
        let advertising = extended
            ? "extended: \(info.advertisingSets ?? 1) set\(info.advertisingSets == 1 ? "" : "s") of up to \(info.maximumAdvertisingDataLength ?? 31) octets; scans hear extended advertisements"
            : "legacy (31 octets, LE 1M)" + (info.supportsExtendedAdvertisingCommands ? " by configuration" : ": no extended advertising commands")
        let privacy = info.resolvesAddressesInController
            ? "in the controller (resolving list of \(optionalCount(info.resolvingListSize)))"
            : info.leFeatures?.contains(.llPrivacy) == true
                ? "in the host (LL Privacy without LE Set Privacy Mode: network privacy mode would hide bonded peers that advertise with their identity)"
                : "in the host (the controller has no LL Privacy)"
        let dataLength = info.supportsDataLengthExtension
            ? "up to \(info.linkDataLengthLimit) octets per LL PDU (LE Set Data Length on request)"
            : "27 octets per LL PDU (no Data Length Extension)"
        let phy = info.supportsPHYUpdate ? "LE Set PHY to \(phyText)" : "LE 1M only"
        let parameters = info.supportsConnectionParametersRequest
            ? "LE Connection Update in both roles (Connection Parameters Request procedure)"
            : "LE Connection Update as central; as peripheral an L2CAP Connection Parameter Update Request"
        let channelSelection = info.lists(.leExtendedCreateConnection) && info.supportedCommands != nil
            ? "LE Channel Selection Algorithm events asked for" : "no Channel Selection Algorithm event (the controller lacks LE Extended Create Connection)"
        let address = info.address.rawValue == 0
            ? "the local identity's static random address (the controller has no public address)"
            : "public \(info.address) where a command asks for the public address"
        return [
            ("own address", address),
            ("advertising", advertising),
            ("privacy", privacy),
            ("data length", dataLength),
            ("PHY", phy),
            ("connection parameters", parameters),
            ("ACL fragments", "\(info.aclBufferLength) octets, \(info.aclBufferCount) in flight"),
            ("channel selection", channelSelection),
            ("pairing crypto", "in the host (OpenSSL libcrypto: P-256, AES-CMAC); LE Secure Connections on every controller"),
        ]
    }

    // MARK: Output

    func text(allCommands: Bool) -> String {
        var out = "Controller \(addressText)" + (spec.map { " on \($0)" } ?? "") + "\n"
        func row(_ label: String, _ value: String) { out += "  " + label.padding(toLength: 22, withPad: " ", startingAt: 0) + " " + value + "\n" }
        for (label, value) in versionLines { row(label, value) }
        row("LMP features", lmpFeatureText)
        let le = leFeatureNames
        row("LE features", info.leFeatures.map { "0x\(hex($0.rawValue)): \(le.count) feature\(le.count == 1 ? "" : "s")" } ?? "unknown")
        for f in le { out += "      \(String(f.bit).leftPadded(2)) \(f.name)\n" }
        for (label, value) in bufferLines { row(label + " buffers", value) }
        row("Lists", "filter accept list \(optionalCount(info.filterAcceptListSize)), resolving list \(optionalCount(info.resolvingListSize)), periodic advertiser list \(optionalCount(info.periodicAdvertiserListSize))")
        row("Data length", dataLengthText)
        row("Adv sets", info.advertisingSets.map { "\($0) of up to \(info.maximumAdvertisingDataLength ?? 31) octets" } ?? "legacy advertising only (one, 31 octets)")
        row("PHYs", phyText)
        let total = SupportedCommandBit.all.count
        let listed = supportedCommandNames.count
        out += "Supported commands: \(info.supportedCommands == nil ? "unknown (Read Local Supported Commands failed)" : "\(listed) of \(total) assigned")\n"
        for g in commandGroups where g.supported > 0 || info.supportedCommands == nil {
            row(g.group, "\(g.supported) of \(g.assigned)")
        }
        if allCommands { for name in supportedCommandNames { out += "      \(name)\n" } }
        out += "Commands the stack uses (+ present, - absent: what the stack does without it"
            + (info.supportedCommands == nil ? "; ? the controller did not say, so the stack tries each" : "") + "):\n"
        for use in HostCommandUse.all {
            let name = SupportedCommandBit.of(use.opcode)?.name ?? use.opcode.description
            let present = info.lists(use.opcode)
            let mark = info.supportedCommands == nil ? "?" : present ? "+" : "-"
            out += "  \(mark) \(name)" + (present ? "" : ": " + (use.without ?? "REQUIRED: the stack cannot work without it")) + "\n"
        }
        out += "Stack choices:\n"
        for (label, value) in choices { row(label, value) }
        return out
    }

    var json: JSON {
        var fields: [(String, JSON)] = [("address", .string(info.address.description)), ("hasPublicAddress", .bool(info.address.rawValue != 0))]
        if let spec { fields.append(("hci", .string(spec))) }
        if let v = info.version {
            fields.append(("version", .object([
                ("hci", .int(Int(v.hciVersion))), ("hciName", .string(Self.coreName(v.hciVersion))), ("hciRevision", .int(Int(v.hciSubversion))),
                ("lmp", .int(Int(v.lmpVersion))), ("lmpName", .string(Self.coreName(v.lmpVersion))), ("lmpSubversion", .int(Int(v.lmpSubversion))),
                ("companyIdentifier", .int(Int(v.companyIdentifier))), ("manufacturer", .string(manufacturer(v.companyIdentifier))),
            ])))
        }
        fields.append(("lmpFeatures", info.features.map { .string("0x" + hex($0.rawValue)) } ?? .null))
        fields.append(("leFeatures", .array(leFeatureNames.map { .object([("bit", .int($0.bit)), ("name", .string($0.name))]) })))
        fields.append(("supportedCommands", .object([
            ("count", .int(supportedCommandNames.count)),
            ("groups", .array(commandGroups.map { .object([("group", .string($0.group)), ("supported", .int($0.supported)), ("assigned", .int($0.assigned))]) })),
            ("names", .array(supportedCommandNames.map { .string($0) })),
        ])))
        fields.append(("stackCommands", .array(HostCommandUse.all.map { use in
            let present = info.lists(use.opcode)
            return .object([("name", .string(SupportedCommandBit.of(use.opcode)?.name ?? use.opcode.description)),
                            ("present", info.supportedCommands == nil ? .null : .bool(present)),
                            ("without", present ? .null : .string(use.without ?? "required"))])
        })))
        fields.append(("buffers", .object([
            ("leACL", .object([("length", .int(info.aclBufferLength)), ("count", .int(info.aclBufferCount)), ("shared", .bool(info.aclBuffersShared))])),
            ("brEdrACL", info.brEdrACLBuffers.map { .object([("length", .int($0.length)), ("count", .int($0.count))]) } ?? .null),
            ("iso", info.isoBuffers.map { .object([("length", .int($0.length)), ("count", .int($0.count))]) } ?? .null),
        ])))
        fields.append(("filterAcceptListSize", info.filterAcceptListSize.map { .int($0) } ?? .null))
        fields.append(("resolvingListSize", info.resolvingListSize.map { .int($0) } ?? .null))
        fields.append(("periodicAdvertiserListSize", info.periodicAdvertiserListSize.map { .int($0) } ?? .null))
        fields.append(("maximumDataLength", info.maximumDataLength.map { m in .object([
            ("txOctets", .int(Int(m.supportedMaxTxOctets))), ("txTime", .int(Int(m.supportedMaxTxTime))),
            ("rxOctets", .int(Int(m.supportedMaxRxOctets))), ("rxTime", .int(Int(m.supportedMaxRxTime))),
        ]) } ?? .null))
        fields.append(("advertisingSets", info.advertisingSets.map { .int($0) } ?? .null))
        fields.append(("maximumAdvertisingDataLength", info.maximumAdvertisingDataLength.map { .int($0) } ?? .null))
        fields.append(("phys", .array(phyNames.map { .string($0) })))
        fields.append(("choices", .object(choices.map { ($0.0, .string($0.1)) })))
        return .object(fields)
    }
}

private func hex<T: FixedWidthInteger>(_ value: T) -> String {
    let s = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, MemoryLayout<T>.size * 2 - s.count)) + s
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
