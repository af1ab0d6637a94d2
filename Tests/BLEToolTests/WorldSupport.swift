import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEVirtualRadio
import BLEWire
import Synchronization
import XCTest
import BLESystems

/// A `ble serve` profile running on a peripheral of a virtual world, as `ble serve` runs it
/// (installed, advertising, its `run` loop in a task on the world's executor).
struct ServedProfile<P: ServeProfile>: Sendable {
    let manager: PeripheralManager
    let device: VirtualDevice
    let profile: P
    let log: LogLines
    let task: Task<Void, Never>

    static func start(_ profile: P, in world: VirtualWorld, name: String, at position: VirtualMedium.Position = .origin,
                      controller: VirtualControllerConfiguration = VirtualControllerConfiguration()) async throws -> ServedProfile {
        let (manager, device) = try await world.addPeripheralManager(name: name, controller: controller, at: position)
        var profile = profile
        try await profile.install(on: manager)
        let (data, response) = profile.advertisement(name: name)
        try await manager.startAdvertising(data, scanResponse: response)
        let log = LogLines()
        let running = profile
        let serveLog = ServeLog(json: false, output: log.append)
        let task = Task<Void, Never>(executorPreference: world.clock.taskExecutor) {
            do { try await running.run(on: manager, log: serveLog) } catch {}
        }
        return ServedProfile(manager: manager, device: device, profile: running, log: log, task: task)
    }

    func stop() async {
        task.cancel()
        await task.value
        await manager.close()
    }
}

/// Lines a `ServeLog` wrote.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }
}

/// Events a system flow emitted, kept in order and also handed out as a stream so a test can
/// react to them while the flow runs.
final class EventLog<Event: Sendable>: Sendable {
    private let recorded = Mutex<[Event]>([])
    let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Event>.makeStream()
    }

    var all: [Event] { recorded.withLock { $0 } }

    func emit(_ event: Event) {
        recorded.withLock { $0.append(event) }
        continuation.yield(event)
    }

    func finish() { continuation.finish() }
}

/// Starts `body` as a task of the world (so it runs in virtual time) and returns it.
func worldTask<T: Sendable>(_ world: VirtualWorld, _ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
    Task(executorPreference: world.clock.taskExecutor) { try await body() }
}
