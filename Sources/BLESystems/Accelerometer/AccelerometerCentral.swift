import BLE
import BLEProfiles
import BLEWire

/// How the S4 charting central runs (`ble accel`, `ble demo`).
public struct AccelerometerCentralOptions: Sendable {
    /// Connect to this device instead of scanning and choosing (its type is learned by scanning
    /// when the argument has none).
    public var target: AddressArgument?
    /// Stop after this many samples; nil runs until the link goes down or the task is cancelled.
    public var count: Int?
    /// How long to scan before listing (docs/SYSTEMS.md S4: 5 s).
    public var scanDuration = AccelerometerProfile.scanDuration
    /// How long a connection attempt may take.
    public var connectTimeout: Duration = .seconds(10)
    /// The ATT MTU to ask for.
    public var mtu = 517
    /// Once subscribed, how long the peripheral may send nothing before the flow ends with
    /// `CentralFlowError.silent` (samples come every 0.2 s).
    public var silenceLimit: Duration = .seconds(10)

    /// The defaults above; set the fields that differ.
    public init() {}
}

/// What the charting central reports, in order.
public enum AccelerometerCentralEvent: Sendable {
    case scanning(Duration)
    /// The scan is over: the devices whose name contains "ble", in the order first heard.
    case found([ScannedDevice])
    case chose(ScannedDevice)
    case connecting(DeviceAddress)
    case connected(DeviceAddress, mtu: Int)
    case subscribed
    /// A sample and when it arrived (the host clock's time since its origin).
    case sample(AccelerometerSample, at: Duration)
    /// A notified value that is not 12 bytes.
    case malformed([UInt8], AccelerometerError)
}

/// Why the charting central stops with an error.
public enum AccelerometerCentralError: Error, CustomStringConvertible {
    case nothingFound(Duration)
    case noAccelerometer([ScannedDevice])
    case notPicked
    case missing(DeviceAddress, BluetoothUUID)

    /// The message shown to the user.
    public var description: String {
        switch self {
        case let .nothingFound(duration):
            return "no device whose name contains \"ble\" was heard in \(NumberText.seconds(duration))"
        case let .noAccelerometer(found):
            return "none of the \(found.count) device(s) named *ble* advertises service 0011; give an ADDRESS to connect anyway"
        case .notPicked:
            return "no device picked"
        case let .missing(address, uuid):
            return "\(address) has no \(uuid == AccelerometerProfile.service ? "service" : "characteristic") \(uuid): not an accelerometer"
        }
    }
}

/// The S4 charting central as a reusable flow: scan 5 s, list the devices named *ble*, have one
/// picked (by the user through `pick`, else by `AccelerometerDeviceChoice.automatic`), connect,
/// discover 0011/0012, subscribe, and report each sample until the count, a disconnect (a typed
/// `BLEError.disconnected`) or cancellation. Sleeps only on the host's clock.
public struct AccelerometerCentral: Sendable {
    /// Asks the user to choose from the list; nil when there is no user to ask.
    public typealias Picker = @Sendable ([ScannedDevice]) async throws -> ScannedDevice

    /// The central it scans and connects with.
    public let central: Central
    /// How it runs.
    public let options: AccelerometerCentralOptions
    /// The user's choice from the list; nil chooses automatically.
    public let pick: Picker?
    /// Where its events go.
    public let emit: @Sendable (AccelerometerCentralEvent) -> Void

    /// A flow on `central`; nothing happens until `run`.
    public init(central: Central, options: AccelerometerCentralOptions, pick: Picker? = nil,
         emit: @escaping @Sendable (AccelerometerCentralEvent) -> Void) {
        self.central = central
        self.options = options
        self.pick = pick
        self.emit = emit
    }

    /// Runs the flow; returns the number of samples received.
    @discardableResult
    public func run() async throws -> Int {
        let address = try await chooseAddress()
        // A choice that came in after Ctrl-C (a prompt answered late) must not start a link.
        try Task.checkCancellation()
        emit(.connecting(address))
        let peripheral = try await central.connect(address, timeout: options.connectTimeout)
        do {
            let received = try await follow(peripheral)
            if peripheral.state == .connected { try? await peripheral.disconnect() }
            return received
        } catch {
            if peripheral.state == .connected { try? await peripheral.disconnect() }
            throw error
        }
    }

    func chooseAddress() async throws -> DeviceAddress {
        if let target = options.target {
            return try await target.resolve(using: central, timeout: options.connectTimeout)
        }
        emit(.scanning(options.scanDuration))
        var heard: [DeviceAddress: ScannedDevice] = [:]
        for try await device in central.scan(timeout: options.scanDuration) {
            heard[device.address] = device
        }
        let candidates = AccelerometerDeviceChoice.candidates(Array(heard.values))
        emit(.found(candidates))
        guard !candidates.isEmpty else { throw AccelerometerCentralError.nothingFound(options.scanDuration) }
        let chosen: ScannedDevice
        if let pick {
            chosen = try await pick(candidates)
            try Task.checkCancellation()
        } else {
            guard let first = AccelerometerDeviceChoice.automatic(candidates) else { throw AccelerometerCentralError.noAccelerometer(candidates) }
            chosen = first
        }
        emit(.chose(chosen))
        return chosen.address
    }

    private func follow(_ peripheral: Peripheral) async throws -> Int {
        try await exchangeMTU(options.mtu, on: peripheral)
        emit(.connected(peripheral.address, mtu: peripheral.mtu))
        guard let service = try await peripheral.discoverServices([AccelerometerProfile.service]).first else {
            throw AccelerometerCentralError.missing(peripheral.address, AccelerometerProfile.service)
        }
        let characteristics = try await peripheral.discoverCharacteristics([AccelerometerProfile.sample], for: service)
        guard let sample = characteristics.first else { throw AccelerometerCentralError.missing(peripheral.address, AccelerometerProfile.sample) }
        let values = await peripheral.notifications(for: sample)
        try await peripheral.setNotifyValue(true, for: sample)
        emit(.subscribed)
        let clock = central.clock
        let (received, linkDown) = try await countNotifications(values, of: sample, on: peripheral, clock: clock, limit: options.count,
                                                                silenceLimit: options.silenceLimit, waitingFor: "sample") { [self] value in
            do throws(AccelerometerError) {
                emit(.sample(try AccelerometerSample(decoding: value), at: clock.now()))
                return true
            } catch {
                emit(.malformed(value, error))
                return false
            }
        }
        guard linkDown else { return received }
        throw BLEError.disconnected(reason: peripheral.disconnectReason ?? .remoteUserTerminatedConnection)
    }
}
