import BLE
import BLESystems
import BLEVirtual
import Foundation
import Synchronization

/// What a test collects from a flow, a profile or a renderer, in the order it came: reported
/// events, or the lines a `ServeLog` (or any writer of lines) wrote. Any thread or task may
/// append while the test reads.
public final class Collected<Element: Sendable>: Sendable {
    private let items = SharedValue<[Element]>([])

    public init() {}

    /// Adds `item` at the end.
    public func append(_ item: Element) { items.withLock { $0.append(item) } }

    /// Everything appended so far.
    public var all: [Element] { items.get() }

    /// Waits until `condition` holds of everything appended so far: checked now and at each
    /// append (no polling); false, with a test failure, after `bound` of real time.
    @discardableResult
    public func wait(_ what: String = "the items", within bound: Duration = .seconds(10),
                     file: StaticString = #filePath, line: UInt = #line,
                     until condition: @escaping @Sendable ([Element]) -> Bool) async -> Bool {
        await items.wait(what, within: bound, file: file, line: line, until: condition)
    }
}

/// A `ble serve` profile running on a peripheral of a virtual world, the way `ble serve` runs it:
/// installed, advertising, its `run` loop in a task on the world's executor (so it keeps virtual
/// time), its `ServeLog` collected. Start one with `VirtualWorld.serve`.
public struct ServedProfile<P: ServeProfile>: Sendable {
    /// The peripheral-role host the profile serves on.
    public let manager: PeripheralManager
    /// The virtual controller under it (to move it, reset it, take it out of range).
    public let device: VirtualDevice
    /// The profile as installed.
    public let profile: P
    /// What the profile logged: JSON objects, one a line, or the lines for people (see `serve`'s
    /// `json`).
    public let log: Collected<String>
    /// The profile's `run` loop.
    public let task: Task<Void, Never>

    /// The logged events named `event`, parsed (a JSON log only).
    public func events(_ event: String) -> [[String: Any]] {
        log.all.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["event"] as? String == event else { return nil }
            return object
        }
    }

    /// Ends the run loop and closes the host.
    public func stop() async {
        task.cancel()
        await task.value
        await manager.close()
    }
}

extension VirtualWorld {
    /// Starts profile `P`, as `ble serve` configures it by default, on a new virtual peripheral
    /// named `name`, logging JSON.
    public func serve<P: ServeProfile>(_ type: P.Type, name: String) async throws -> ServedProfile<P> {
        try await serve(P(), name: name)
    }

    /// Starts `profile`, configured as a test needs it, on a new virtual peripheral named `name`
    /// with the controller `controller`, at `position` (far from the origin, its signal is weak).
    /// With `json` false the log collects the lines for people instead of JSON objects.
    public func serve<P: ServeProfile>(_ profile: P, name: String, at position: VirtualMedium.Position = .origin,
                                       controller: VirtualControllerConfiguration = VirtualControllerConfiguration(),
                                       json: Bool = true) async throws -> ServedProfile<P> {
        let (manager, device) = try await addPeripheralManager(name: name, controller: controller, at: position)
        var profile = profile
        try await profile.install(on: manager)
        let (data, response) = profile.advertisement(name: name)
        try await manager.startAdvertising(data, scanResponse: response)
        let log = Collected<String>()
        let serveLog = ServeLog(json: json, output: { log.append($0) })
        let running = profile
        let task = Task<Void, Never>(executorPreference: clock.taskExecutor) {
            do { try await running.run(on: manager, log: serveLog) } catch {}
        }
        return ServedProfile(manager: manager, device: device, profile: running, log: log, task: task)
    }
}
