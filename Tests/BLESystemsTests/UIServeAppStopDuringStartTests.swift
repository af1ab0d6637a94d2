import BLE
import BLEHTTP
import BLEVirtual
import BLESystems
import Foundation
import Synchronization
import XCTest

/// A stop that arrives while `/serve`'s start is still installing (a page's Stop, or `ble ui`
/// shutting down) must leave the screen stopped: the start undoes itself when its install
/// ends, so no profile runs and no service is left in the database.
final class UIServeAppStopDuringStartTests: XCTestCase {
    /// Holds an install until the test opens it, and says when one is waiting.
    final class InstallGate: Sendable {
        private struct State {
            var entered = false
            var open = false
            var waiter: CheckedContinuation<Void, Never>?
        }
        private let state = Mutex(State())

        /// Closes the gate again for the next install.
        func reset() { state.withLock { $0 = State() } }
        /// Whether an install waits at the gate (or passed it).
        var entered: Bool { state.withLock { $0.entered } }

        /// Waits until the gate is open.
        func pass() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let go = state.withLock { s -> Bool in
                    s.entered = true
                    if s.open { return true }
                    s.waiter = c
                    return false
                }
                if go { c.resume() }
            }
        }

        func open() {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.open = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }

    /// Adds one service, then waits at `gate` before the start goes on to advertise.
    struct GatedProfile: ServeProfile {
        static let name = "gated"
        static let summary = "adds one service, then waits for the test"
        static let gate = InstallGate()
        init() {}
        mutating func install(on manager: PeripheralManager) async throws {
            _ = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.read], value: [1]),
            ]))
            await Self.gate.pass()
        }
        func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
            (AdvertisingData.Builder().localName(name).build(), nil)
        }
        func run(on manager: PeripheralManager, log: ServeLog) async throws {
            try await manager.clock.sleep(for: .seconds(3_600))
        }
    }

    typealias Page = UIServeAppTests.Page

    /// Waits (in virtual time, bounded) until `condition` holds; whether it did.
    static func until(_ world: VirtualWorld, _ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<200 where !condition() { try await world.clock.sleep(for: .milliseconds(10)) }
        return condition()
    }

    /// A POST's status, and whether its answer says nothing runs.
    static func post(_ app: UIServeApp, _ path: String, _ body: String) async -> (status: Int, stopped: Bool) {
        let answer = await UIServeAppTests.post(app, path, body)
        return (answer.status, answer.json["running"] is NSNull)
    }

    static func status(_ app: UIServeApp) async -> [String: Any] {
        guard case let .response(r)? = await app.handle(HTTPRequest(method: "GET", target: "/api/serve")) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:]
    }

    /// What a start whose install was stopped by `stop` left: whether the install was
    /// reached and the page told of the stop, the start's status, whether the state says
    /// nothing runs, and the database's services before and after.
    struct Outcome: Sendable {
        var installing = false
        var told = false
        var start = 0
        var stoppedAfter = false
        var before: [UInt16] = []
        var after: [UInt16] = []
    }

    /// Starts the gated profile, runs `stop` once its install waits at the gate, opens the gate
    /// once the page says it is stopping, and waits for both; `more` then runs on the app.
    static func stopDuringStart(_ world: VirtualWorld, _ stop: @escaping @Sendable (UIServeApp) async -> Void,
                                then more: (UIServeApp) async -> Void = { _ in }) async throws -> Outcome {
        let (ui, _) = try await world.addCentral()
        let app = UIServeApp(central: ui, token: "t", profiles: [GatedProfile.self])
        let database = PeripheralManager(sharingControllerWith: ui)
        var outcome = Outcome()
        outcome.before = await database.services.map(\.range.lowerBound)
        let page = try await Page(app, world: world)
        GatedProfile.gate.reset()
        let starting = Task(executorPreference: world.clock.taskExecutor) { await Self.post(app, "/api/serve/start", #"{"profile": "gated"}"#) }
        outcome.installing = try await until(world) { GatedProfile.gate.entered }
        let stopping = Task(executorPreference: world.clock.taskExecutor) { await stop(app) }
        // The page is told the stop is taken.
        outcome.told = try await until(world) { page.lastState?["stopping"] as? Bool == true }
        GatedProfile.gate.open()
        await stopping.value
        outcome.start = await starting.value.status
        outcome.after = await database.services.map(\.range.lowerBound)
        outcome.stoppedAfter = await status(app)["running"] is NSNull
        await more(app)
        await app.stop()
        page.task.cancel()
        await ui.close()
        return outcome
    }

    /// `POST /api/serve/stop` during the install: the stop waits for the start and answers
    /// with nothing running; the start is answered 409; the database is as it was.
    func testAStopDuringTheStartLeavesItStopped() async throws {
        let stop = Answer()
        let outcome = try await VirtualWorld.run(limit: .seconds(600)) { world in
            try await Self.stopDuringStart(world) { app in stop.set(await Self.post(app, "/api/serve/stop", "")) }
        }
        XCTAssertTrue(outcome.installing, "the start reached its install")
        XCTAssertTrue(outcome.told, "the page says it is stopping")
        XCTAssertEqual(stop.get()?.status, 200, "the stop is carried out, not refused")
        XCTAssertEqual(stop.get()?.stopped, true)
        XCTAssertEqual(outcome.start, 409, "the start says it was stopped")
        XCTAssertTrue(outcome.stoppedAfter, "nothing runs after the stop")
        XCTAssertEqual(outcome.after, outcome.before, "the start's service was removed")
    }

    /// `stop()` (the server shutting down) during the install: it returns once the start has
    /// undone itself, and no start is taken after it.
    func testShuttingDownDuringTheStartLeavesItStoppedAndTakesNoMoreStarts() async throws {
        let later = Answer()
        let outcome = try await VirtualWorld.run(limit: .seconds(600)) { world in
            try await Self.stopDuringStart(world, { await $0.stop() }) { app in later.set(await Self.post(app, "/api/serve/start", #"{"profile": "gated"}"#)) }
        }
        XCTAssertTrue(outcome.installing, "the start reached its install")
        XCTAssertTrue(outcome.told, "the page says it is stopping")
        XCTAssertEqual(outcome.start, 409)
        XCTAssertTrue(outcome.stoppedAfter, "nothing runs after the stop")
        XCTAssertEqual(outcome.after, outcome.before, "the start's service was removed")
        XCTAssertEqual(later.get()?.status, 503, "no start after the server stopped")
    }

    /// A POST's answer, kept by a task for the test to look at.
    final class Answer: Sendable {
        private let value = Mutex<(status: Int, stopped: Bool)?>(nil)
        func set(_ answer: (status: Int, stopped: Bool)) { value.withLock { $0 = answer } }
        func get() -> (status: Int, stopped: Bool)? { value.withLock { $0 } }
    }
}
