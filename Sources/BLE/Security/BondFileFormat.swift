import BLEWire

/// The text form of a bond file: `key=value` lines under a version line, keys as hex (least
/// significant octet first, as HCI takes them), so a person can read a bond and a newer version
/// can add keys an older one ignores. Sans-IO: strings in, values out; a file that is not a
/// bond gives a typed error naming the line.
enum BondFileFormat {
    static let header = "# ble bond v1"
    static let identityHeader = "# ble identity v1"

    struct Malformed: Error, CustomStringConvertible {
        let why: String
        var description: String { why }
    }

    // MARK: Bond

    static func encode(_ b: Bond) -> String {
        var lines = [header, "peer=\(b.peer.address)/\(b.peer.type.peerType)"]
        func add(_ key: String, _ value: String?) { if let value { lines.append("\(key)=\(value)") } }
        add("connection-address", b.connectionAddress.map { "\($0.address)/\($0.type.peerType)" })
        add("peer-ltk", b.peerLongTermKey?.hexString)
        add("peer-ediv", String(b.peerEDIV))
        add("peer-rand", String(b.peerRand))
        add("local-ltk", b.localLongTermKey?.hexString)
        add("local-ediv", String(b.localEDIV))
        add("local-rand", String(b.localRand))
        add("peer-irk", b.peerIdentityResolvingKey?.hexString)
        add("peer-csrk", b.peerSignatureKey?.hexString)
        add("peer-sign-counter", b.peerSignCounter.map { String($0) })
        add("local-sign-counter", String(b.localSignCounter))
        add("local-csrk", b.localSignatureKey?.hexString)
        add("secure-connections", String(b.secureConnections))
        add("authenticated", String(b.authenticated))
        add("key-size", String(b.keySize))
        add("security-level", String(b.securityLevel.rawValue))
        for (handle, value) in b.clientConfigurations.sorted(by: { $0.key < $1.key }) {
            lines.append("cccd=\(handle):\(value)")
        }
        add("database-hash", b.databaseHash?.hexString)
        add("served-database-hash", b.servedDatabaseHash?.hexString)
        add("client-features", b.clientSupportedFeatures?.hexString)
        return lines.joined(separator: "\n") + "\n"
    }

    static func decodeBond(_ text: String) throws(Malformed) -> Bond {
        let fields = try parse(text, header: header)
        guard let peerText = fields.values["peer"]?.first, let peer = DeviceAddress(string: peerText) else {
            throw Malformed(why: "no valid peer= line")
        }
        guard let keySize: Int = try fields.number("key-size"), (7...16).contains(keySize) else {
            throw Malformed(why: "no key-size in 7...16")
        }
        var clientConfigurations: [UInt16: UInt16] = [:]
        for entry in fields.values["cccd"] ?? [] {
            let parts = entry.split(separator: ":")
            guard parts.count == 2, let h = UInt16(parts[0]), let v = UInt16(parts[1]) else { throw Malformed(why: "bad cccd=\(entry)") }
            clientConfigurations[h] = v
        }
        var connectionAddress: DeviceAddress?
        if let text = fields.values["connection-address"]?.first {
            guard let a = DeviceAddress(string: text) else { throw Malformed(why: "bad connection-address=\(text)") }
            connectionAddress = a
        }
        return Bond(
            peer: peer, connectionAddress: connectionAddress,
            peerLongTermKey: try fields.key("peer-ltk"), peerEDIV: try fields.number("peer-ediv") ?? 0,
            peerRand: try fields.number("peer-rand") ?? 0,
            localLongTermKey: try fields.key("local-ltk"), localEDIV: try fields.number("local-ediv") ?? 0,
            localRand: try fields.number("local-rand") ?? 0,
            peerIdentityResolvingKey: try fields.key("peer-irk"), peerSignatureKey: try fields.key("peer-csrk"),
            peerSignCounter: try fields.number("peer-sign-counter"), localSignCounter: try fields.number("local-sign-counter") ?? 0,
            localSignatureKey: try fields.key("local-csrk"),
            secureConnections: try fields.flag("secure-connections"), authenticated: try fields.flag("authenticated"),
            keySize: keySize,
            clientConfigurations: clientConfigurations,
            databaseHash: try fields.bytes("database-hash"),
            servedDatabaseHash: try fields.bytes("served-database-hash"),
            clientSupportedFeatures: try fields.bytes("client-features"))
    }

    // MARK: Identity

    static func encode(_ identity: LocalIdentity) -> String {
        [identityHeader, "address=\(identity.address)", "irk=\(identity.identityResolvingKey.hexString)",
         "csrk=\(identity.signatureKey.hexString)"].joined(separator: "\n") + "\n"
    }

    static func decodeIdentity(_ text: String) throws(Malformed) -> LocalIdentity {
        let fields = try parse(text, header: identityHeader)
        guard let a = fields.values["address"]?.first, let address = BDAddress(string: a), address.randomKind == .staticRandom else {
            throw Malformed(why: "no static random address= line")
        }
        guard let irk = try fields.key("irk"), let csrk = try fields.key("csrk") else { throw Malformed(why: "irk= and csrk= are required") }
        return LocalIdentity(identityResolvingKey: irk, address: address, signatureKey: csrk)
    }

    // MARK: Lines

    struct Fields {
        var values: [String: [String]] = [:]

        func bytes(_ key: String) throws(Malformed) -> [UInt8]? {
            guard let text = values[key]?.first else { return nil }
            guard let b = [UInt8](hexString: text) else { throw Malformed(why: "\(key) is not hex") }
            return b
        }

        /// A 16-octet key.
        func key(_ key: String) throws(Malformed) -> [UInt8]? {
            guard let b = try bytes(key) else { return nil }
            guard b.count == 16 else { throw Malformed(why: "\(key) has \(b.count) octets, not 16") }
            return b
        }

        func number<T: FixedWidthInteger>(_ key: String) throws(Malformed) -> T? {
            guard let text = values[key]?.first else { return nil }
            guard let v = T(text) else { throw Malformed(why: "\(key)=\(text) is not a number in range") }
            return v
        }

        func flag(_ key: String) throws(Malformed) -> Bool {
            switch values[key]?.first {
            case "true": return true
            case "false", nil: return false
            case let other?: throw Malformed(why: "\(key)=\(other) is not true or false")
            }
        }
    }

    static func parse(_ text: String, header: String) throws(Malformed) -> Fields {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == header else { throw Malformed(why: "first line is not \"\(header)\"") }
        var fields = Fields()
        for (number, line) in lines.enumerated().dropFirst() where !line.isEmpty && !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { throw Malformed(why: "line \(number + 1) has no '='") }
            fields.values[String(line[..<eq]), default: []].append(String(line[line.index(after: eq)...]))
        }
        return fields
    }
}
