import BLE
import BLERuntime
import BLEVirtualRadio
import BLEWire

/// A simulated world: one virtual radio and any number of hosts on it, sharing one clock. In
/// virtual time (`run`), every task runs on the world's executor and time jumps from one event
/// to the next, so a test or the demo runs as fast as the CPU allows and always the same way.
///
/// ```swift
/// try await VirtualWorld.run { world in
///     let (manager, _) = try await world.addPeripheralManager(name: "Thermo")
///     let (central, _) = try await world.addCentral()
///     ...
/// }
/// ```
public final class VirtualWorld: Sendable {
    /// The world's clock: a `VirtualTime`, or real time.
    public let clock: any BLEClock
    /// The radio its devices share: add peripherals and hosts to it, or serve it over TCP
    /// (`VirtualRadioServer`).
    public let radio: VirtualRadio

    /// A world on `clock` (real time by default; see `run` for virtual time).
    public init(clock: any BLEClock = SystemClock(), airTimeModel: Bool = true) {
        self.clock = clock
        self.radio = VirtualRadio(clock: clock, airTimeModel: airTimeModel)
    }

    /// Runs `body` in a new world in virtual time and shuts the world down afterwards.
    public static func run<T: Sendable>(airTimeModel: Bool = true, limit: Duration = .seconds(86_400),
                                        _ body: @escaping @Sendable (VirtualWorld) async throws -> T) async throws -> T {
        try await VirtualTime.run(limit: limit) { time in
            let world = VirtualWorld(clock: time, airTimeModel: airTimeModel)
            do {
                let result = try await body(world)
                await world.radio.shutdown()
                return result
            } catch {
                await world.radio.shutdown()
                throw error
            }
        }
    }

    /// A central-role host on a new controller.
    public func addCentral(address: BDAddress? = nil, configuration: HostConfiguration = HostConfiguration(),
                           controller: VirtualControllerConfiguration? = nil,
                           at position: VirtualMedium.Position = .origin) async throws -> (Central, VirtualDevice) {
        let device = await radio.addDevice(address: address, configuration: controller, at: position)
        return (try await Central.open(transport: device.transport, clock: clock, configuration: configuration), device)
    }

    /// A peripheral-role host on a new controller.
    public func addPeripheralManager(name: String = "SwiftBLE", address: BDAddress? = nil,
                                     configuration: HostConfiguration = HostConfiguration(),
                                     controller: VirtualControllerConfiguration? = nil,
                                     at position: VirtualMedium.Position = .origin) async throws -> (PeripheralManager, VirtualDevice) {
        let device = await radio.addDevice(address: address, configuration: controller, at: position)
        let manager = try await PeripheralManager.open(transport: device.transport, name: name, clock: clock, configuration: configuration)
        return (manager, device)
    }
}

extension VirtualWorld {
    /// The process's shared world in real time: what the transport spec `virtual` (`--hci
    /// virtual`, `BLE_HCI=virtual`) attaches to. Each open adds a controller to it.
    public static let shared = VirtualWorld()

    /// Sets what runs once in `shared` before its first controller is handed out (the `ble` tool
    /// puts its demo peripherals there). Has no effect once the shared world has been opened.
    public static func setSharedSetup(_ setup: @escaping @Sendable (VirtualWorld) async throws -> Void) async {
        await SharedWorldGate.instance.set(setup)
    }

    /// A new controller on `shared`, after its setup has run.
    static func sharedController(configuration: VirtualControllerConfiguration? = nil) async throws -> any HCITransport {
        try await SharedWorldGate.instance.ready(shared)
        return await shared.radio.addDevice(configuration: configuration).transport
    }
}

/// Runs the shared world's setup exactly once, however many opens race for it.
private actor SharedWorldGate {
    static let instance = SharedWorldGate()
    private var setup: (@Sendable (VirtualWorld) async throws -> Void)?
    private var running: Task<Void, any Error>?

    func set(_ body: @escaping @Sendable (VirtualWorld) async throws -> Void) {
        guard running == nil else { return }
        setup = body
    }

    func ready(_ world: VirtualWorld) async throws {
        if running == nil {
            let body = setup
            running = Task { try await body?(world) }
        }
        try await running?.value
    }
}
