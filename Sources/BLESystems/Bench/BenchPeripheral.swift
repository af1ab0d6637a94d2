import BLE
import BLERuntime
import BLEWire

/// bumble-bench's peripheral: advertise as `Speed Peripheral`, take one connection, set up the
/// mode, run the scenario, linger, and end (disconnecting if the central has not).
public enum BenchPeripheral {
    /// Runs the peripheral side on the controller behind `transport`; the transport is closed at the end.
    public static func run(_ configuration: BenchConfiguration, transport: any HCITransport, clock: any BLEClock,
                           log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        let manager = try await PeripheralManager.open(transport: transport, name: BenchProfile.peripheralName,
                                                       address: .staticRandom(configuration.ownAddress), clock: clock,
                                                       configuration: configuration.hostConfiguration)
        do {
            let result = try await run(configuration, on: manager, log: log)
            await manager.close()
            return result
        } catch {
            await manager.close()
            throw error
        }
    }

    /// Runs the peripheral side on an open manager (left open).
    public static func run(_ configuration: BenchConfiguration, on manager: PeripheralManager,
                           log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        let clock = manager.clock
        let (central, server, listener) = try await advertiseAndConnect(configuration, manager, log)
        defer { server?.stop() }
        log("### Connected")
        log("@@@ Connection: central \(central.address)")
        try? await manager.stopAdvertising()
        if let octets = configuration.dataLength {
            log("+++ Requesting extended data length")
            do { try await manager.setDataLength(octets, for: central) } catch { log("!!! Unable to set the data length: \(error)") }
        }

        let io: any BenchPacketIO
        switch configuration.mode {
        case .gattServer:
            guard let server else { throw BenchError.unsupported("no GATT server") }
            io = server
        case .l2capServer:
            guard let listener else { throw BenchError.unsupported("no L2CAP listener") }
            let channel = try await BenchWaiting.firstChannel(of: listener) { await waitForDisconnection(of: central, manager) }
            log("*** L2CAP channel: \(channel.info)")
            io = BenchL2CAPIO(channel: channel)
        case .l2capClient:
            // The central needs a moment after connecting (see `BenchProfile.postConnectionWait`).
            try await clock.sleep(for: configuration.postConnectionWait)
            log(">>> Opening L2CAP channel on PSM = \(configuration.psm)")
            let channel = try await manager.openL2CAPChannel(to: central, psm: configuration.psm, parameters: configuration.channelParameters)
            log("*** L2CAP channel: \(channel.info)")
            io = BenchL2CAPIO(channel: channel)
        case .gattClient:
            // The central serves the speed service; we are its GATT client on the same link.
            try await clock.sleep(for: configuration.postConnectionWait)
            guard let peer = await manager.client(for: central) else { throw BenchError.linkEnded(waiting: "the GATT client to start") }
            io = try await BenchGATTClientIO.connect(peer, mtu: configuration.attMTU, log: log)
        }

        let result = try await BenchScenarioRunner.run(configuration.run, on: io, clock: clock, log: log)
        try await clock.sleep(for: configuration.lingerTime)
        // The central usually ends the link once it has the ack; give it the time to, then end it ourselves.
        let gone = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await waitForDisconnection(of: central, manager)
                return true
            }
            group.addTask {
                try? await clock.sleep(for: configuration.lingerTime * 2)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !gone { try? await manager.disconnect(central) }
        return result
    }

    /// Installs what listens (our GATT server, our L2CAP listener) before the first advertisement
    /// goes out, advertises, and returns the first central that connects. The event stream it
    /// watches for the connection ends with it, so it does not keep every event of the run.
    private static func advertiseAndConnect(_ configuration: BenchConfiguration, _ manager: PeripheralManager,
                                            _ log: @escaping @Sendable (String) -> Void) async throws
        -> (ConnectedCentral, BenchGATTServer?, L2CAPListener?) {
        let events = await manager.events
        var server: BenchGATTServer?
        var listener: L2CAPListener?
        switch configuration.mode {
        case .gattServer:
            server = try await BenchGATTServer.install(on: manager, log: log)
        case .l2capServer:
            listener = try await manager.listenL2CAP(psm: configuration.psm, parameters: configuration.channelParameters)
            log("### Listening for L2CAP connection on PSM \(configuration.psm)")
        case .gattClient, .l2capClient:
            break
        }
        let advertisement = AdvertisingData.Builder().flags(discoverableFlags).localName(BenchProfile.peripheralName).build()
        try await manager.startAdvertising(advertisement, parameters: AdvertisingParameters(interval: configuration.advertisingInterval))
        let address = await manager.address.map { "\($0.address)" } ?? "?"
        log("### Waiting for connection on \(address)...")
        for await event in events {
            if case let .connected(central) = event { return (central, server, listener) }
        }
        server?.stop()
        try Task.checkCancellation()
        throw BenchError.linkEnded(waiting: "a connection")
    }

    /// Returns once `central` is no longer connected (or the task is cancelled).
    static func waitForDisconnection(of central: ConnectedCentral, _ manager: PeripheralManager) async {
        let events = await manager.events
        guard await manager.connectedCentrals.contains(central) else { return }
        for await event in events {
            if case let .disconnected(c, _) = event, c == central { return }
        }
    }
}
