import BLE
import BLESystems

/// Pandora's `Host` service on the stack (pandora/host.proto): what each call does, with the
/// results as JSON objects for the bridge.
extension PandoraStack {
    /// ReadLocalAddress: the controller's public address.
    func localAddress() throws(ControlError) -> JSON {
        let central = try requireCentral()
        return .object([("address", .string(central.controllerInfo.address.description))])
    }

    /// Scan: every report (duplicates included) until the request is cancelled.
    func scan(_ request: ControlRequest, emit: @escaping @Sendable (JSON) async -> Void) async throws {
        let central = try requireCentral()
        try await useOwnAddressType(try request.int("ownAddressType", in: 0...3, default: 0))
        var phys = LEPHYSet()
        if case let .array(list)? = request.arguments["phys"] {
            for item in list {
                switch item {
                case .string("1m"): phys.insert(.le1M)
                case .string("coded"): phys.insert(.leCoded)
                default: throw ControlError(.invalidArgument, "scan: phys are '1m' and 'coded'")
                }
            }
        }
        let passive = try request.bool("passive")
        let results = central.scan(filter: ScanFilter(allowDuplicates: true), active: !passive, timeout: nil,
                                   phys: phys.isEmpty ? nil : phys)
        for try await device in results {
            await emit(Self.report(device))
        }
    }

    /// One ScanningResponse's fields.
    static func report(_ device: ScannedDevice) -> JSON {
        var fields: [(String, JSON)] = [
            ("address", .string(device.address.address.description)),
            ("addressType", .string(device.address.type == .public ? "public" : "random")),
            ("legacy", .bool(device.extended == nil)),
            ("connectable", .bool(device.isConnectable)),
            ("truncated", .bool(device.isTruncated)),
            ("data", .hex(device.advertisement.encode())),
        ]
        if let rssi = device.rssi { fields.append(("rssi", .int(Int(rssi)))) }
        if let identity = device.identity {
            fields.append(("identity", .string(identity.address.description)))
            fields.append(("identityType", .string(identity.type == .public ? "public" : "random")))
        }
        if let e = device.extended {
            fields.append(("primaryPhy", .string(e.primaryPHY == .leCoded ? "coded" : "1m")))
            if let s = e.secondaryPHY { fields.append(("secondaryPhy", .string(s == .leCoded ? "coded" : s == .le2M ? "2m" : "1m"))) }
            if let sid = e.advertisingSID { fields.append(("sid", .int(Int(sid)))) }
            if let tx = e.txPower { fields.append(("txPower", .int(Int(tx)))) }
            if let i = e.periodicAdvertisingInterval { fields.append(("periodicInterval", .int(Int(i)))) }
        }
        return .object(fields)
    }

    /// Advertise: starts advertising and yields a connection for each central that connects,
    /// until the request is cancelled (advertising then stops).
    func advertise(_ request: ControlRequest, emit: @escaping @Sendable (JSON) async -> Void) async throws {
        let manager = try requireManager()
        if request.optionalString("target") != nil {
            throw ControlError(.unimplemented, "directed advertising: the BLE API has no directed advertising yet")
        }
        let legacy = try request.bool("legacy")
        let connectable = try request.bool("connectable")
        let data = AdvertisingData(bytes: try request.hex("data") ?? [])
        let scanResponse = try request.hex("scanResponse").map { AdvertisingData(bytes: $0) }
        let interval = try request.double("interval", default: 0)
        guard interval == 0 || (20...10_240).contains(interval) else {
            throw ControlError(.invalidArgument, "advertise: interval must be 20...10240 ms")
        }
        let period: Duration = interval == 0 ? .milliseconds(100) : .microseconds(Int64(interval * 1000))
        try await useOwnAddressType(try request.int("ownAddressType", in: 0...3, default: 0))
        let kind: AdvertisingParameters.Kind = connectable ? .connectable : scanResponse != nil ? .scannable : .nonConnectable
        guard manager === self.manager else { throw ControlError(.aborted, "the stack was reset") }
        let connections = connectionsWhileAdvertising(id: request.id)
        var set: AdvertisingSet?
        do {
            if legacy {
                try await manager.startAdvertising(data, scanResponse: scanResponse,
                                                   parameters: AdvertisingParameters(kind: kind, interval: period))
            } else {
                let primary: LEPHY = request.optionalString("primaryPhy") == "coded" ? .leCoded : .le1M
                let secondary: LEPHY = switch request.optionalString("secondaryPhy") {
                case "coded": .leCoded
                case "2m": .le2M
                default: .le1M
                }
                set = try await manager.startAdvertisingSet(data, scanResponse: scanResponse, parameters: AdvertisingSetParameters(
                    kind: kind, interval: period, primaryPHY: primary, secondaryPHY: secondary))
            }
        } catch {
            stopWaitingForConnections(id: request.id)
            throw error
        }
        await withTaskCancellationHandler {
            for await cookie in connections { await emit(.object([("connection", .int(Int(cookie)))])) }
        } onCancel: {
            Task { await self.stopWaitingForConnections(id: request.id) }
        }
        stopWaitingForConnections(id: request.id)
        if let set { try? await manager.stopAdvertisingSet(set) } else { try? await manager.stopAdvertising() }
    }

    /// ConnectLE: connects to an address as central. Returns `connection`, or `peerNotFound`
    /// when nothing answered in time, or `connectionAlreadyExists`.
    func connect(_ request: ControlRequest) async throws -> JSON {
        let central = try requireCentral()
        guard let address = BDAddress(string: try request.string("address")) else {
            throw ControlError(.invalidArgument, "connect: 'address' must be XX:XX:XX:XX:XX:XX")
        }
        let type: AddressType = try request.string("addressType") == "public" ? .public : .random
        let peer = DeviceAddress(address, type: type)
        if isConnected(to: peer) { return .object([("connectionAlreadyExists", .bool(true))]) }
        try await useOwnAddressType(try request.int("ownAddressType", in: 0...3, default: 0))
        do {
            let peripheral = try await central.connect(peer, timeout: .seconds(15))
            guard central === self.central else {
                // A reset meanwhile: the link belongs to a closed host.
                try? await peripheral.disconnect()
                throw ControlError(.aborted, "the stack was reset")
            }
            return .object([("connection", .int(Int(register(.asCentral(peripheral), peer: peer))))])
        } catch BLEError.timeout {
            return .object([("peerNotFound", .bool(true))])
        }
    }

    /// Disconnect: ends the link and returns once the controller has.
    func disconnect(_ cookie: UInt64) async throws {
        let r = try record(cookie)
        guard !r.down else { return }
        switch r.link {
        case let .asCentral(p): try await p.disconnect()
        case let .asPeripheral(c, manager): try await manager.disconnect(c)
        }
        try await waitUntilDown(cookie)
    }

    /// GetConnectionParameters: the link's parameters now, `connectionNotFound` once it is down.
    func connectionParameters(_ cookie: UInt64) async throws -> JSON {
        let r = try record(cookie)
        let parameters: LinkParameters?
        switch r.link {
        case let .asCentral(p): parameters = r.down ? nil : p.connectionParameters
        case let .asPeripheral(c, manager): parameters = await manager.connectionParameters(of: c)
        }
        return Self.json(parameters)
    }

    /// WaitConnectionUpdate: the parameters of the link's next LE Connection Update Complete;
    /// `connectionNotFound` when the link goes down first.
    func waitConnectionUpdate(_ cookie: UInt64) async throws -> JSON {
        let r = try record(cookie)
        let updates: AsyncStream<LinkParameters>
        switch r.link {
        case let .asCentral(p): updates = p.connectionParameterUpdates
        case let .asPeripheral(c, manager): updates = await manager.connectionParameterUpdates(for: c)
        }
        for await parameters in updates { return Self.json(parameters) }
        try Task.checkCancellation()
        return Self.json(nil)
    }

    private static func json(_ l: LinkParameters?) -> JSON {
        guard let l else { return .object([("connectionNotFound", .bool(true))]) }
        return .object([("interval", .int(Int(l.interval))), ("latency", .int(Int(l.latency))),
                        ("supervisionTimeout", .int(Int(l.supervisionTimeout)))])
    }
}
