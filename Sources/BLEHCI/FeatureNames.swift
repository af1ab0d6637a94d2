/// The names of the LE feature bits (Core spec Vol 6 Part B §4.6, "Feature support"), for
/// `ble info` and logs.
extension LESupportedFeatures {
    /// Bit number to the spec's name of the feature, bits 0–48 of page 0.
    public static let bitNames: [Int: String] = [
        0: "LE Encryption", 1: "Connection Parameters Request procedure", 2: "Extended Reject Indication",
        3: "Peripheral-initiated Features Exchange", 4: "LE Ping", 5: "LE Data Packet Length Extension",
        6: "LL Privacy", 7: "Extended Scanner Filter Policies", 8: "LE 2M PHY",
        9: "Stable Modulation Index - Transmitter", 10: "Stable Modulation Index - Receiver", 11: "LE Coded PHY",
        12: "LE Extended Advertising", 13: "LE Periodic Advertising", 14: "Channel Selection Algorithm #2",
        15: "LE Power Class 1", 16: "Minimum Number of Used Channels procedure", 17: "Connection CTE Request",
        18: "Connection CTE Response", 19: "Connectionless CTE Transmitter", 20: "Connectionless CTE Receiver",
        21: "Antenna Switching During CTE Transmission (AoD)", 22: "Antenna Switching During CTE Reception (AoA)",
        23: "Receiving Constant Tone Extensions", 24: "Periodic Advertising Sync Transfer - Sender",
        25: "Periodic Advertising Sync Transfer - Recipient", 26: "Sleep Clock Accuracy Updates",
        27: "Remote Public Key Validation", 28: "Connected Isochronous Stream - Central",
        29: "Connected Isochronous Stream - Peripheral", 30: "Isochronous Broadcaster", 31: "Synchronized Receiver",
        32: "Connected Isochronous Stream (Host Support)", 33: "LE Power Control Request", 34: "LE Power Control Request",
        35: "LE Path Loss Monitoring", 36: "Periodic Advertising ADI support", 37: "Connection Subrating",
        38: "Connection Subrating (Host Support)", 39: "Channel Classification", 40: "Advertising Coding Selection",
        41: "Advertising Coding Selection (Host Support)", 42: "Decision-Based Advertising Filtering",
        43: "Periodic Advertising with Responses - Advertiser", 44: "Periodic Advertising with Responses - Scanner",
        45: "Unsegmented Framed Mode", 46: "Channel Sounding", 47: "Channel Sounding (Host Support)",
        48: "Channel Sounding Tone Quality Indication",
    ]

    /// The PHYs these features give a radio: LE 1M always, LE 2M (bit 8) and LE Coded (bit 11)
    /// when listed (Vol 6 Part B §4.6).
    public var phys: LEPHYSet {
        var phys: LEPHYSet = .le1M
        if contains(.le2MPHY) { phys.insert(.le2M) }
        if contains(.leCodedPHY) { phys.insert(.leCoded) }
        return phys
    }

    /// The set bits, lowest first, each with its name ("bit N" for one not named here).
    public var namedBits: [(bit: Int, name: String)] {
        (0..<64).filter { rawValue & (1 << UInt64($0)) != 0 }.map { ($0, Self.bitNames[$0] ?? "bit \($0)") }
    }
}

extension LocalSupportedCommands {
    /// Whether the controller lists the command with this opcode (its bit in `SupportedCommandBit`,
    /// §6.27); a command without a bit (Read Local Supported Commands itself) counts as listed.
    public func lists(_ opcode: HCIOpcode) -> Bool {
        guard let bit = SupportedCommandBit.of(opcode) else { return true }
        return supports(octet: bit.octet, bit: bit.bit)
    }
}

extension SupportedCommandBit {
    /// The command group of the opcode's OGF (Core spec Vol 4 Part E §7.1–§7.8).
    public var groupName: String { Self.groupName(ogf: opcode.rawValue >> 10) }

    /// The name of an OGF's command group.
    public static func groupName(ogf: UInt16) -> String {
        switch ogf {
        case 0x01: return "Link Control"
        case 0x02: return "Link Policy"
        case 0x03: return "Controller & Baseband"
        case 0x04: return "Informational"
        case 0x05: return "Status Parameters"
        case 0x06: return "Testing"
        case 0x08: return "LE Controller"
        default: return "OGF 0x\(String(ogf, radix: 16))"
        }
    }
}
