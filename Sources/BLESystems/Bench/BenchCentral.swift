import BLE
import BLERuntime
import BLEWire

/// bumble-bench's central: connect to the peripheral (by address or name), wait a second, set
/// up the mode, run the scenario, linger a second, disconnect.
public enum BenchCentral {
    /// Runs the central side on the controller behind `transport`; the transport is closed at the end.
    public static func run(_ configuration: BenchConfiguration, transport: any HCITransport, clock: any BLEClock,
                           log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        let central = try await Central.open(transport: transport, address: .staticRandom(configuration.ownAddress), clock: clock,
                                             configuration: configuration.hostConfiguration)
        do {
            let result = try await run(configuration, on: central, log: log)
            await central.close()
            return result
        } catch {
            await central.close()
            throw error
        }
    }

    /// Runs the central side on an open central (left open).
    public static func run(_ configuration: BenchConfiguration, on central: Central,
                           log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        let clock = central.clock
        // What must listen before the peer can speak: our GATT server, our L2CAP listener.
        var server: BenchGATTServer?
        var listener: L2CAPListener?
        switch configuration.mode {
        case .gattServer:
            server = try await BenchGATTServer.install(on: PeripheralManager(sharingControllerWith: central), log: log)
        case .l2capServer:
            listener = try await central.listenL2CAP(psm: configuration.psm, parameters: configuration.channelParameters)
            log("### Listening for L2CAP connection on PSM \(configuration.psm)")
        case .gattClient, .l2capClient:
            break
        }
        defer { server?.stop() }

        let target = try await resolve(configuration.peripheral, central: central, timeout: configuration.connectTimeout)
        log("### Connecting to \(configuration.peripheral)...")
        let peripheral = try await central.connect(target, timeout: configuration.connectTimeout)
        log("### Connected")
        log(connectionLine(peripheral))
        log("@@@ PHY: TX:\(phyName(peripheral.phy))/RX:\(phyName(peripheral.phy))")
        try await clock.sleep(for: configuration.postConnectionWait)
        if let octets = configuration.dataLength {
            log("+++ Requesting extended data length")
            do { try await peripheral.setDataLength(octets) } catch { log("!!! Unable to set the data length: \(error)") }
        }
        if let phy = configuration.phy {
            do { try await peripheral.setPHY(phy) } catch { log("!!! Unable to set the PHY: \(error)") }
        }

        let io: any BenchPacketIO
        switch configuration.mode {
        case .gattClient:
            io = try await BenchGATTClientIO.connect(peripheral, mtu: configuration.attMTU, log: log)
        case .gattServer:
            guard let server else { throw BenchError.unsupported("no GATT server") }
            io = server
        case .l2capClient:
            log(">>> Opening L2CAP channel on PSM = \(configuration.psm)")
            let channel = try await peripheral.openL2CAPChannel(psm: configuration.psm, parameters: configuration.channelParameters)
            log("*** L2CAP channel: \(channel.info)")
            io = BenchL2CAPIO(channel: channel)
        case .l2capServer:
            guard let listener else { throw BenchError.unsupported("no L2CAP listener") }
            let channel = try await BenchWaiting.firstChannel(of: listener) {
                for await state in peripheral.stateUpdates { if case .disconnected = state { return } }
            }
            log("*** L2CAP channel: \(channel.info)")
            io = BenchL2CAPIO(channel: channel)
        }

        let result = try await BenchScenarioRunner.run(configuration.run, on: io, clock: clock, log: log)
        try await clock.sleep(for: configuration.lingerTime)
        if case .connected = peripheral.state { try? await peripheral.disconnect() }
        return result
    }

    /// The peripheral named on the command line: an address (random unless `/public` is
    /// given, as bumble-bench takes it), else a name to scan for.
    static func resolve(_ text: String, central: Central, timeout: Duration) async throws -> DeviceAddress {
        if let address = DeviceAddress(string: text), text.contains("/") { return address }
        if let address = BDAddress(string: text) { return DeviceAddress(address, type: .random) }
        for try await device in central.scan(filter: ScanFilter(nameContains: text, allowDuplicates: true), active: true, timeout: timeout)
            where device.advertisement.localName == text {
            await central.stopScan()
            return device.address
        }
        throw BenchError.peripheralNotFound(text)
    }

    /// `@@@ Connection: DL=(TX:…,RX:…) Parameters=interval/latency/supervision MTU=…`, bumble-bench's
    /// line (interval and supervision timeout in milliseconds).
    static func connectionLine(_ p: Peripheral) -> String {
        let params = p.connectionParameters
        return "@@@ Connection: DL=(TX:\(p.dataLength.tx),RX:\(p.dataLength.rx)) "
            + "Parameters=\(NumberText.fixed(params.intervalMilliseconds, 2))/\(params.latency)/\(params.supervisionTimeoutMilliseconds) MTU=\(p.mtu)"
    }

    /// `1M`, `2M`, `CODED`, as bumble-bench names PHYs.
    static func phyName(_ phy: LEPHY) -> String {
        switch phy {
        case .le1M: return "1M"
        case .le2M: return "2M"
        case .leCoded: return "CODED"
        default: return phy.description
        }
    }
}
