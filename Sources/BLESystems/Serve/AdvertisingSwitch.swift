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
    /// Whether the user wants advertising: on at start unless --no-advertise, flipped by `a`.
    private let wanted: Mutex<Bool>

    /// A switch in the state `wanted`; nothing is sent to the radio until `start` or `toggle`.
    public init(manager: PeripheralManager, data: AdvertisingData, scanResponse: AdvertisingData?, wanted: Bool) {
        self.manager = manager
        self.data = data
        self.scanResponse = scanResponse
        self.wanted = Mutex(wanted)
    }

    /// Whether the user wants advertising now.
    public var isWanted: Bool { wanted.withLock { $0 } }

    /// Starts advertising `data` (at start, and when the switch goes on).
    public func start() async throws {
        try await manager.startAdvertising(data, scanResponse: scanResponse)
    }

    /// One `a`: flips the wanted state and makes the host follow it (stopping also keeps it
    /// from restarting after the current connection). Returns the state now wanted.
    @discardableResult
    public func toggle() async throws -> Bool {
        let want = wanted.withLock { w -> Bool in
            w.toggle()
            return w
        }
        if want { try await start() } else { try await manager.stopAdvertising() }
        return want
    }
}
