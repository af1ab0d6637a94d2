import BLE
import BLEWire
import Synchronization

/// Advertising as `ble serve` started it, switched off and on by the user (key `a`, as the S4
/// peripheral's user does, docs/SYSTEMS.md S4).
///
/// What the user wants is kept here, not read back from the radio: connectable advertising
/// stops by itself while a central is connected (and the host restarts it afterwards), so the
/// radio saying "not advertising" does not mean the user switched it off.
public final class AdvertisingSwitch: Sendable {
    /// The peripheral whose advertising is switched.
    public let manager: PeripheralManager
    /// What is advertised while the switch is on.
    public let data: AdvertisingData
    /// The scan response sent with it, if any.
    public let scanResponse: AdvertisingData?
    /// With `ble serve --extended`: the connectable extended set's parameters (the data and scan
    /// response then go out together as the set's data, which has room for both); nil: legacy
    /// advertising (`startAdvertising`).
    public let extended: AdvertisingSetParameters?
    /// Whether the user wants advertising: on at start unless --no-advertise, flipped by `a`.
    private let wanted: Mutex<Bool>
    /// The extended set running now.
    private let running = Mutex<AdvertisingSet?>(nil)

    /// A switch in the state `wanted`; nothing is sent to the radio until `start` or `toggle`.
    public init(manager: PeripheralManager, data: AdvertisingData, scanResponse: AdvertisingData?, extended: AdvertisingSetParameters? = nil,
                wanted: Bool) {
        self.manager = manager
        self.data = data
        self.scanResponse = scanResponse
        self.extended = extended
        self.wanted = Mutex(wanted)
    }

    /// Whether the user wants advertising now.
    public var isWanted: Bool { wanted.withLock { $0 } }

    /// Starts advertising `data` (at start, and when the switch goes on).
    public func start() async throws {
        guard let extended else { return try await manager.startAdvertising(data, scanResponse: scanResponse) }
        // One set at a time: a set still running (a stop that failed) goes first.
        try await stop()
        let set = try await manager.startAdvertisingSet(scanResponse.map { data.merging($0) } ?? data, parameters: extended)
        running.withLock { $0 = set }
    }

    /// Stops advertising (the switch going off, or the end of `ble serve`). The set is
    /// forgotten only once stopped, so a failed stop is tried again by the next.
    public func stop() async throws {
        guard extended != nil else { return try await manager.stopAdvertising() }
        guard let set = running.withLock({ $0 }) else { return }
        do {
            try await manager.stopAdvertisingSet(set)
        } catch BLEError.invalidArgument {
            // Not running any more (removed already): as good as stopped.
        }
        running.withLock { if $0 == set { $0 = nil } }
    }

    /// The extended set running now, if any.
    public var runningSet: AdvertisingSet? { running.withLock { $0 } }

    /// One `a`: flips the wanted state and makes the host follow it (stopping also keeps it
    /// from restarting after the current connection). Returns the state now wanted.
    @discardableResult
    public func toggle() async throws -> Bool {
        let want = wanted.withLock { w -> Bool in
            w.toggle()
            return w
        }
        if want { try await start() } else { try await stop() }
        return want
    }
}
