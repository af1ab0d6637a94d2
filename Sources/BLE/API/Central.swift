import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire

/// The manager's state, named as CoreBluetooth names it (docs/SYSTEMS.md S2 prints these).
public enum ManagerState: String, Sendable {
    /// Not known yet. CoreBluetooth's starting state; this stack knows the state once open.
    case unknown
    /// The controller is being reset. Kept for CoreBluetooth parity; this stack does not report it.
    case resetting
    /// The controller cannot do LE. Kept for CoreBluetooth parity; opening such a controller fails.
    case unsupported
    /// The app may not use Bluetooth. Kept for CoreBluetooth parity; opening fails with the
    /// transport's permission error instead.
    case unauthorized
    /// The host has failed (transport lost, hardware error) or was closed: nothing more works.
    case poweredOff
    /// The controller is initialised and the host is running.
    case poweredOn
}

/// The central role: scans for advertisements and connects to peripherals. Shaped like
/// CoreBluetooth's `CBCentralManager`, with async/await in place of delegates.
///
/// ```swift
/// let central = try await Central.open(spec: "tcp:127.0.0.1:6402")
/// for try await device in central.scan(filter: ScanFilter(serviceUUIDs: ["180D"]), timeout: .seconds(10)) {
///     let peripheral = try await central.connect(device.address, timeout: .seconds(10))
///     ...
/// }
/// ```
public final class Central: Sendable {
    let host: HostController
    /// What the controller reported about itself when it was initialised: address, versions,
    /// supported commands and features, ACL buffers.
    public let controllerInfo: ControllerInfo

    /// Opens the transport named by `spec` (or `BLE_HCI`), initialises the controller, and
    /// optionally records every HCI packet to a btsnoop file. `address` is what peers see of this
    /// central when it scans actively and connects (Core spec Vol 6 Part B §1.3).
    public static func open(spec: String? = nil, capture: String? = nil, address: OwnAddress = .public, clock: any BLEClock = SystemClock(),
                            configuration: HostConfiguration = HostConfiguration()) async throws -> Central {
        let transport = try await TransportFactory.open(spec: spec, capture: capture)
        return try await open(transport: transport, address: address, clock: clock, configuration: configuration)
    }

    /// Initialises the controller behind an open transport (a virtual radio's controller, a test
    /// double) and returns a central on it; if initialisation fails the transport is closed and the error thrown.
    public static func open(transport: any HCITransport, address: OwnAddress = .public, clock: any BLEClock = SystemClock(),
                            configuration: HostConfiguration = HostConfiguration()) async throws -> Central {
        let host = HostController(transport: transport, clock: clock, configuration: configuration)
        do {
            let info = try await host.start()
            try await host.run { try await $0.setOwnAddress(address) }
            return Central(host: host, info: info)
        } catch {
            await host.close()
            throw error
        }
    }

    /// The clock this central's host runs on: sleep on it (not `Task.sleep`) so code keeps to
    /// virtual time in a `VirtualWorld`.
    public var clock: any BLEClock { host.clock }

    init(host: HostController, info: ControllerInfo) {
        self.host = host
        self.controllerInfo = info
    }

    /// `poweredOn` once the controller is initialised; `poweredOff` after a transport or hardware failure.
    public var state: ManagerState {
        get async { await host.run { $0.failure } == nil ? .poweredOn : .poweredOff }
    }

    /// Scans and yields devices as they are heard (merged with their scan response when
    /// `active`: a device's first scannable advertisement waits for its scan response through
    /// lost or late ones, up to `ScanAggregator.scanResponseWaitEvents` more advertisements or
    /// `scanResponseWaitTime`, and what a scan holds when it ends is yielded before its end).
    /// The stream ends at `timeout`, and ending or cancelling its consumer ends the
    /// scan. Several scans may run at once, each with its own filter and timeout: they share
    /// the controller's scanner, which stops when the last ends (`stopScan` and `connect` end
    /// them all).
    ///
    /// `phys` are the PHYs it listens on (nil: `HostConfiguration.listeningPHYs`): LE 1M, or with the extended commands
    /// (`HostConfiguration.advertisingCommands`) LE Coded as well or alone, for long-range
    /// advertisers (Core spec Vol 4 Part E §7.8.64); a scan that asks for LE Coded from a host on
    /// the legacy commands, or of a controller whose LE features lack it, ends at once with
    /// `BLEError.unsupported`.
    ///
    /// `cycle` makes the controller listen only part of each period (`ScanCycle`, §7.8.65) with
    /// the extended commands (`.unsupported` on the legacy ones); scans running at once share
    /// the scanner, which then listens all the time if any of them did not ask for a cycle, and
    /// a scan asking for a cycle other than a running one's ends at once with `.busy`.
    public func scan(filter: ScanFilter = ScanFilter(), active: Bool = true, timeout: Duration? = nil,
                     phys: LEPHYSet? = nil, cycle: ScanCycle? = nil) -> ScanResults {
        let buffer = ScanBuffer()
        let host = self.host
        let phys = phys ?? host.configuration.listeningPHYs
        let starter = Task(executorPreference: host.clock.taskExecutor) {
            do {
                let units = try cycle.map { c throws(BLEError) in
                    let u = try c.units()
                    return ScanCycleUnits(duration: u.duration, period: u.period)
                }
                let id = try await host.run { try await $0.scanning.start(active: active, phys: phys, filter: filter, timeout: timeout, ownAddressType: $0.ownAddress.type, cycle: units, consumer: buffer, $0) }
                buffer.onTermination { Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.scanning.finish(id, $0) } } }
                if Task.isCancelled { await host.run { $0.scanning.finish(id, $0) } }
            } catch {
                buffer.close(error: error)
            }
        }
        buffer.onTermination { starter.cancel() }
        return ScanResults(buffer: buffer)
    }

    /// Ends every running scan and waits for the controller to confirm.
    public func stopScan() async {
        await host.run { await $0.scanning.stop($0) }
    }

    /// Scans until the first device matching `filter` is heard, or fails with `.timeout`. Only
    /// this scan ends then: others running on the controller go on.
    public func find(filter: ScanFilter, active: Bool = true, timeout: Duration) async throws -> ScannedDevice {
        for try await device in scan(filter: filter, active: active, timeout: timeout) {
            return device
        }
        throw BLEError.timeout("no device matching the filter was found in \(timeout)")
    }

    /// Connects to a peripheral, failing with `.timeout` when it does not answer in time (the
    /// attempt is cancelled on the radio with LE Create Connection Cancel). Cancelling the
    /// calling task cancels the attempt the same way.
    ///
    /// A bonded device may be named by its identity address even while it advertises with
    /// resolvable private addresses (Core spec Vol 3 Part C §10.7): the controller's resolving
    /// list finds it, or the RPA last heard from it, or, when neither can, a scan for an
    /// advertisement its IRK resolves within the same `timeout`.
    ///
    /// `phys` are the PHYs the initiator listens on for the peripheral's advertising (nil:
    /// `HostConfiguration.listeningPHYs`): LE 1M, or
    /// with the extended commands LE Coded as well or alone (LE Extended Create Connection, Vol 4
    /// Part E §7.8.66, which also gives parameters for a connection that starts on LE 2M).
    public func connect(_ address: DeviceAddress, timeout: Duration = .seconds(10), phys: LEPHYSet? = nil) async throws -> Peripheral {
        let phys = phys ?? host.configuration.listeningPHYs
        try await host.run { try ListeningPHYs.validate(phys, for: .initiating, extended: $0.usesExtendedCommands, supported: $0.supportedPHYs) }
        await host.run { await $0.scanning.stop($0) }
        let started = clock.now()
        let target: DeviceAddress
        if await host.run({ $0.privacy.needsScan(toReach: address, within: Self.rpaFreshness, $0) }) {
            target = try await findBonded(address, timeout: timeout, phys: phys)
        } else {
            target = await host.run { $0.privacy.connectionTarget(for: address, within: Self.rpaFreshness, $0) }
        }
        let remaining = max(timeout - (clock.now() - started), .milliseconds(100))
        let link = try await host.run { try await $0.connections.connect(to: target, timeout: remaining, phys: phys, ownAddressType: $0.ownAddress.type, $0) }
        return Peripheral(host: host, link: link)
    }

    /// How long an RPA heard from a bonded device is taken as still its address.
    static let rpaFreshness: Duration = .seconds(60)

    /// The address a bonded `identity` advertises with now (heard on `phys`, where the connect
    /// will look for it): its identity, or an RPA its IRK resolves.
    private func findBonded(_ identity: DeviceAddress, timeout: Duration, phys: LEPHYSet) async throws -> DeviceAddress {
        for try await device in scan(filter: ScanFilter(allowDuplicates: true), active: false, timeout: timeout, phys: phys) {
            if device.address.sameDevice(as: identity) || device.identity?.sameDevice(as: identity) == true {
                await host.run { await $0.scanning.stop($0) }
                return device.address
            }
        }
        throw BLEError.timeout("bonded device \(identity) was not heard in \(timeout), by its identity or a resolvable private address")
    }

    /// Closes the transport; every pending operation fails with `.closed`.
    public func close() async {
        await host.close()
    }
}
