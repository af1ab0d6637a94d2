import BLE
import BLESystems
import BLEVirtual

/// `ble advertise`: advertises exactly what it is told (no flags, no name unless given), as one
/// or several advertising sets, and prints each set and the connections made to it.
struct AdvertiseCommand: BLECommand {
    static let name = "advertise"
    static let abstract = "Advertise given data: legacy or extended, several sets, periodic advertising."
    static let options: [CommandOption] = [
        .flag("extended", help: "extended advertising PDUs (data up to the controller's maximum, coded PHY); default legacy PDUs (31 octets)"),
        .flag("connectable", help: "centrals may connect (extended: not together with --scannable)"),
        .flag("scannable", help: "scanners may ask for the scan response (extended: the scan response is all it carries)"),
        .single("phy", value: "1m|coded", help: "primary advertising PHY (extended only; default 1m)"),
        .single("secondary-phy", value: "1m|2m|coded", help: "PHY of the auxiliary packets that carry the data (extended only; default: the primary PHY)"),
        .single("name", value: "NAME", help: "add a Complete Local Name structure"),
        .single("manufacturer-data", value: "HEX", help: "add a Manufacturer Specific Data structure: company id (2 octets, little-endian) first"),
        .single("data", value: "HEX", help: "raw AD structures (length, type, data...) put first in the advertising data"),
        .single("scan-response", value: "HEX", help: "raw AD structures of the scan response (needs --scannable, or legacy --connectable)"),
        .single("periodic-data", value: "HEX", help: "raw AD structures sent as periodic advertising (extended, not connectable or scannable)"),
        .single("periodic-interval", value: "MS", help: "periodic advertising interval in ms, 7.5...81918 (default 100)"),
        .single("interval", value: "MS", help: "advertising interval in ms, 20...10485759 (default 100)"),
        .single("tx-power", value: "DBM", help: "TX power to ask the controller for, -127...20 (it answers with what it chose)"),
        .single("address", value: "ADDR", help: "the host's address: a static random XX:XX:XX:XX:XX:XX (top two bits set) or 'public' (default: as ble serve)"),
        .single("sets", value: "N", help: "N sets with the same options, each from its own static random address (default 1)"),
        .single("duration", value: "S", help: "each set stops after S seconds (the controller ends it); the command ends when all have"),
        .single("max-events", value: "N", help: "each set stops after N advertising events, 1...255"),
        .flag("json", help: "one JSON object per set and per event"),
    ]
    static let needs: CommandNeeds = [.controller, .handlesInterrupts]
    static let discussion = """
    Sets run through Bluetooth 5's extended advertising commands (also for legacy PDUs) when the
    controller has them; on a controller without them only one legacy set can run. With one set
    it advertises from the host's address (--address, else as ble serve: the stored identity
    address with a bond store, else public); with --sets N each set gets a static random address
    of its own. A connectable set advertises again after each
    connection. Runs until interrupted, or until every set has ended (--duration, --max-events).
    """

    var controller: ControllerOptions
    var parameters: AdvertisingSetParameters
    var data: AdvertisingData
    var scanResponse: AdvertisingData?
    var periodic: (parameters: PeriodicAdvertisingParameters, data: AdvertisingData)?
    var sets: Int
    var address: OwnAddress?
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
        let extended = args.flag("extended")
        var p = AdvertisingSetParameters(legacyPDUs: !extended)
        let connectable = args.flag("connectable"), scannable = args.flag("scannable")
        if connectable && scannable && extended {
            throw UsageError("an extended set is connectable or scannable, not both (legacy --connectable is both)")
        }
        p.kind = connectable ? .connectable : scannable ? .scannable : .nonConnectable
        if let text = args.option("phy") {
            guard extended else { throw UsageError("--phy needs --extended (legacy PDUs go on LE 1M)") }
            p.primaryPHY = try Self.phy(text, "--phy", allowed: ["1m", "coded"])
            p.secondaryPHY = p.primaryPHY
        }
        if let text = args.option("secondary-phy") {
            guard extended else { throw UsageError("--secondary-phy needs --extended") }
            p.secondaryPHY = try Self.phy(text, "--secondary-phy", allowed: ["1m", "2m", "coded"])
        }
        if let ms = try args.option("interval").map({ try Self.milliseconds($0, "--interval", 20...10_485_759) }) {
            p.intervalMin = ms
            p.intervalMax = ms
        }
        if let text = args.option("tx-power") {
            guard let dBm = Int8(text), (-127...20).contains(dBm) else { throw UsageError("--tx-power expects dBm -127...20, not '\(text)'") }
            p.txPower = dBm
        }
        p.duration = try args.seconds("duration")
        if let text = args.option("max-events") {
            guard let n = Int(text), (1...255).contains(n) else { throw UsageError("--max-events expects 1...255, not '\(text)'") }
            p.maxEvents = n
        }
        p.continueWhileConnected = true
        parameters = p

        var structures = try Self.structures(args.option("data"), "--data")
        if let name = args.option("name") { structures.append(.init(type: .completeLocalName, data: Array(name.utf8))) }
        if let text = args.option("manufacturer-data") {
            guard let bytes = [UInt8](hexString: text), bytes.count >= 2 else {
                throw UsageError("--manufacturer-data expects hex bytes, the company id's two first")
            }
            structures.append(.init(type: .manufacturerSpecificData, data: bytes))
        }
        data = AdvertisingData(structures: structures)
        if extended, p.kind == .scannable, !structures.isEmpty {
            throw UsageError("a scannable extended set has no advertising data: put --data, --name and --manufacturer-data in --scan-response")
        }
        scanResponse = try args.option("scan-response").map { AdvertisingData(structures: try Self.structures($0, "--scan-response")) }
        if scanResponse != nil, !p.isScannable {
            throw UsageError("--scan-response needs --scannable (or legacy --connectable)")
        }
        if let text = args.option("periodic-data") {
            guard extended, p.kind == .nonConnectable else { throw UsageError("--periodic-data needs --extended, without --connectable or --scannable") }
            let interval = try args.option("periodic-interval").map { try Self.milliseconds($0, "--periodic-interval", 7.5...81_918.75) } ?? .milliseconds(100)
            periodic = (PeriodicAdvertisingParameters(interval: interval), AdvertisingData(structures: try Self.structures(text, "--periodic-data")))
        } else if args.option("periodic-interval") != nil {
            throw UsageError("--periodic-interval goes with --periodic-data")
        }
        if let text = args.option("sets") {
            guard let n = Int(text), (1...16).contains(n) else { throw UsageError("--sets expects 1...16, not '\(text)'") }
            sets = n
        } else {
            sets = 1
        }
        switch args.option("address") {
        case nil: address = nil
        case "public"?: address = .public
        case let text?:
            guard let a = BDAddress(string: text), a.randomKind == .staticRandom else {
                throw UsageError("--address expects a static random address (top two bits set, e.g. C0:...) or public")
            }
            address = .staticRandom(a)
        }
        json = args.flag("json")
    }

    func run() async throws {
        let log = ServeLog(json: json)
        let own = try address ?? controller.security.ownAddress(store: controller.security.bondStore(), identity: controller.security.bondsNamed)
        let manager = try await PeripheralManager.open(transport: Controllers.open(spec: controller.hci, capture: controller.capture), address: own)
        let events = await manager.events
        let started: [AdvertisingSet]
        do {
            started = try await start(on: manager, log: log)
        } catch {
            await manager.close()
            throw error
        }
        let legacyOnly = started.isEmpty
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var ended = Set<UInt8>()
                for await event in events {
                    log.log(event)
                    if case let .advertisingSetTerminated(t) = event, !t.restarting, !t.reason.isConnection {
                        ended.insert(t.set)
                        if !legacyOnly, ended.count == started.count { return }
                    }
                }
            }
            group.addTask { await waitForInterrupt(limit: legacyOnly ? parameters.duration : nil) }
            await group.next()
            group.cancelAll()
        }
        for set in started { try? await manager.stopAdvertisingSet(set) }
        if legacyOnly { try? await manager.stopAdvertising() }
        for central in await manager.connectedCentrals { try? await manager.disconnect(central) }
        await manager.close()
    }

    /// Starts the sets (or, on a controller without the extended commands, one legacy
    /// advertisement: then the list is empty) and prints each.
    private func start(on manager: PeripheralManager, log: ServeLog) async throws -> [AdvertisingSet] {
        guard let capacity = await manager.advertisingSetCapacity else {
            guard sets == 1, parameters.legacyPDUs, periodic == nil, parameters.maxEvents == nil else {
                throw BLEError.unsupported("the controller has no extended advertising commands: one legacy set, without --extended, --periodic-data or --max-events")
            }
            try await manager.startAdvertising(data, scanResponse: scanResponse, parameters: AdvertisingParameters(
                kind: parameters.kind, interval: parameters.intervalMin, restartAfterDisconnect: true, continueWhileConnected: true))
            let address = await manager.address
            log.line("advertising", [("set", .int(0)), ("address", .optional(address.map { $0.address.description })), ("extended", .bool(false))],
                     text: "advertising (legacy commands) from \(address.map { "\($0)" } ?? "?")")
            return []
        }
        guard sets <= capacity.sets else {
            throw BLEError.unsupported("--sets \(sets): the controller runs \(capacity.sets) advertising set(s)")
        }
        var started: [AdvertisingSet] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<sets {
            var p = parameters
            if sets > 1 {
                // Static random: the two top bits set (Core spec Vol 6 Part B §1.3.2.1).
                p.address = .random(BDAddress(rawValue: UInt64.random(in: 1..<0x3FFF_FFFF_FFFF, using: &generator) | 0xC000_0000_0000))
            }
            let set: AdvertisingSet
            do {
                set = try await manager.startAdvertisingSet(data, scanResponse: scanResponse, parameters: p, periodic: periodic)
            } catch {
                // None left running on a controller that may outlive this process.
                for running in started { try? await manager.stopAdvertisingSet(running) }
                throw error
            }
            started.append(set)
            let octets = (try? data.encode(limit: Int.max).count) ?? 0
            var fields: [(String, JSON)] = [
                ("set", .int(Int(set.handle))), ("sid", .int(Int(set.sid))),
                ("address", .optional(set.address.map { $0.address.description })),
                ("addressType", .optional(set.address.map { $0.type == .public ? "public" : "random" })),
                ("extended", .bool(set.extended)), ("txPower", set.txPower == 127 ? .null : .int(Int(set.txPower))), ("dataLength", .int(octets)),
            ]
            var text = "\(set) \(set.extended ? "extended" : "legacy"), \(octets) octets"
            if set.extended {
                fields += [("primaryPHY", .string(Self.phyName(p.primaryPHY))), ("secondaryPHY", .string(Self.phyName(p.secondaryPHY)))]
                text += ", \(p.primaryPHY)/\(p.secondaryPHY)"
            }
            if let periodic {
                fields.append(("periodicIntervalMs", .number(Self.milliseconds(periodic.parameters.intervalMin))))
                text += ", periodic every \(Self.milliseconds(periodic.parameters.intervalMin)) ms"
            }
            text += set.txPower == 127 ? "" : ", TX power \(set.txPower) dBm"
            text += " (the controller runs \(capacity.sets) sets of up to \(capacity.maximumDataLength) octets)"
            log.line("advertising", fields, text: text)
        }
        return started
    }

    /// `d` in milliseconds (to the microsecond), as output shows intervals.
    static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds / 1_000_000_000_000) / 1000
    }

    static func phyName(_ phy: LEPHY) -> String {
        switch phy {
        case .le2M: return "2M"
        case .leCoded: return "coded"
        default: return "1M"
        }
    }

    static func phy(_ text: String, _ option: String, allowed: [String]) throws -> LEPHY {
        guard allowed.contains(text.lowercased()) else { throw UsageError("\(option) takes \(allowed.joined(separator: ", ")), not '\(text)'") }
        switch text.lowercased() {
        case "2m": return .le2M
        case "coded": return .leCoded
        default: return .le1M
        }
    }

    static func milliseconds(_ text: String, _ option: String, _ range: ClosedRange<Double>) throws -> Duration {
        guard let ms = Double(text), range.contains(ms) else { throw UsageError("\(option) expects ms in \(range.lowerBound)...\(range.upperBound), not '\(text)'") }
        return .microseconds(Int64((ms * 1000).rounded()))
    }

    /// `HEX` as AD structures; one that runs past the end is a usage error, not silently cut.
    static func structures(_ text: String?, _ option: String) throws -> [AdvertisingData.Structure] {
        guard let text else { return [] }
        guard let bytes = [UInt8](hexString: text) else { throw UsageError("\(option) expects hex bytes, not '\(text)'") }
        let parsed = AdvertisingData(bytes: bytes)
        if let problem = parsed.malformed { throw UsageError("\(option): \(problem)") }
        return parsed.structures
    }
}
