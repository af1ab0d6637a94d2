import BLE
import BLERuntime
import Synchronization

/// bumble-bench's `gatt-server` mode: the speed service in our database; the client's writes to
/// TX are the packets that come in, notifications of RX the ones that go out, once the client
/// has subscribed to RX.
///
/// It watches the manager's events from the moment it is installed (before advertising), so a
/// write that comes right after the connection is not missed: the events arrive in order, and a
/// stored value's writes come as `.valueWritten` events in the order the client sent them.
public final class BenchGATTServer: BenchPacketIO {
    /// The manager whose database holds the service.
    public let manager: PeripheralManager
    /// TX's and RX's value handles.
    public let txHandle: UInt16
    public let rxHandle: UInt16

    private struct State {
        var subscribed = false
        var mtu = 23
        var ended = false
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }
    private let state = BenchLocked(State())
    private let packets: SingleReader<AsyncStream<[UInt8]>.Iterator>
    private let watcher: Task<Void, Never>

    /// Adds the speed service to `manager` and starts watching its events.
    public static func install(on manager: PeripheralManager, log: @escaping @Sendable (String) -> Void) async throws -> BenchGATTServer {
        let handles = try await manager.add(BenchProfile.serviceDefinition)
        guard let tx = handles.valueHandle(for: BenchProfile.tx), let rx = handles.valueHandle(for: BenchProfile.rx) else {
            throw BenchError.missingAttribute("handle for the speed characteristics in our own database")
        }
        let events = await manager.events
        return BenchGATTServer(manager: manager, tx: tx, rx: rx, events: events, log: log)
    }

    private init(manager: PeripheralManager, tx: UInt16, rx: UInt16, events: PeripheralManagerEventStream,
                 log: @escaping @Sendable (String) -> Void) {
        self.manager = manager
        txHandle = tx
        rxHandle = rx
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        packets = SingleReader(stream)
        let state = self.state
        watcher = Task(executorPreference: manager.clock.taskExecutor) {
            for await event in events {
                switch event {
                case let .valueWritten(_, handle, value) where handle == tx:
                    continuation.yield(value)
                case let .subscriptionChanged(_, handle, notifications, _) where handle == rx:
                    log(notifications ? "*** RX subscription" : "*** RX un-subscription")
                    let waiters = state.withLock { s in
                        s.subscribed = notifications
                        defer { if notifications { s.waiters = [] } }
                        return notifications ? s.waiters : []
                    }
                    for w in waiters { w.resume() }
                case let .mtuChanged(_, mtu):
                    state.withLock { $0.mtu = mtu }
                case .disconnected:
                    Self.end(state)
                    continuation.finish()
                    return
                default:
                    continue
                }
            }
            Self.end(state)
            continuation.finish()
        }
    }

    deinit { watcher.cancel() }

    /// Stops watching the events (the run is over).
    public func stop() {
        watcher.cancel()
    }

    private static func end(_ state: BenchLocked<State>) {
        let waiters = state.withLock { s in
            s.ended = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume(throwing: BenchError.linkEnded(waiting: "the client to subscribe to RX")) }
    }

    public var overhead: Int { 0 }

    public func maximumPacketLength() async -> Int { state.withLock { $0.mtu } - 3 }

    public func waitUntilReady() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { s in
                    if s.subscribed { return .success(()) }
                    if s.ended { return .failure(BenchError.linkEnded(waiting: "the client to subscribe to RX")) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.waiters.append(c)
                    return nil
                }
                if let now { c.resume(with: now) }
            }
        } onCancel: {
            let waiters = state.withLock { s in
                defer { s.waiters = [] }
                return s.waiters
            }
            for w in waiters { w.resume(throwing: CancellationError()) }
        }
    }

    public func send(_ packet: [UInt8]) async throws {
        _ = try await manager.updateValueWaiting(packet, forHandle: rxHandle)
    }

    public func receive() async throws -> [UInt8]? {
        await packets.next()
    }
}
