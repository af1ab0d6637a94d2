import BLERuntime
import BLEVirtual
import BLEVirtualRadio
import BLE
import BLEHost
import BLEWire
import Foundation
import Synchronization
import XCTest
import BLESystems

/// What a test collects from a flow or a profile: reported events, or ServeLog's JSON lines.
final class Collected<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.withLock { $0 } }
}

/// A `ble serve` profile running on a virtual peripheral, the way `ServeCommand` runs it
/// (install, advertise, run), with its log collected as JSON objects.
struct RunningProfile: Sendable {
    let manager: PeripheralManager
    let task: Task<Void, Never>
    let log: Collected<String>

    /// The logged events named `event`, parsed.
    func events(_ event: String) -> [[String: Any]] {
        log.all.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["event"] as? String == event else { return nil }
            return object
        }
    }

    func stop() async {
        task.cancel()
        await task.value
        await manager.close()
    }
}

extension VirtualWorld {
    /// Starts profile `P` on a new virtual peripheral named `name`.
    func serve<P: ServeProfile>(_ type: P.Type, name: String) async throws -> RunningProfile {
        try await serve(P(), name: name)
    }

    /// Starts `profile`, configured as a test needs it, on a new virtual peripheral named
    /// `name`, at `position` (far from the origin, its signal is weak). With `json` false the
    /// log collects the lines for people instead.
    func serve<P: ServeProfile>(_ profile: P, name: String, at position: VirtualMedium.Position = .origin,
                                json: Bool = true) async throws -> RunningProfile {
        let (manager, _) = try await addPeripheralManager(name: name, at: position)
        var profile = profile
        try await profile.install(on: manager)
        let (data, response) = profile.advertisement(name: name)
        try await manager.startAdvertising(data, scanResponse: response)
        let log = Collected<String>()
        let serveLog = ServeLog(json: json, output: { log.append($0) })
        let running = profile
        let task = Task(executorPreference: clock.taskExecutor) {
            do { try await running.run(on: manager, log: serveLog) } catch {}
        }
        return RunningProfile(manager: manager, task: task, log: log)
    }
}

/// Bytes that look like an image: deterministic, every byte value, not valid UTF-8.
func imageBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

/// A new empty directory for one test's files, removed when the test ends.
func temporaryDirectory(for test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("ble-test-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// An echo server that serves the files under `directory` (`ble serve echo --files DIR`).
func echoServer(serving directory: URL) throws -> EchoServeProfile {
    EchoServeProfile(files: try ServedDirectory(directory.path))
}
