import BLERuntime
import BLE
import BLEProfiles
import BLEWire
import Synchronization

/// Why a seed system's central flow (docs/SYSTEMS.md S1, S2) stopped short, in words a user can act on.
public enum CentralFlowError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The controller is not usable (CoreBluetooth's states other than poweredOn).
    case notPoweredOn(ManagerState)
    /// Nothing advertising the service (at the given address, if any) was heard in time.
    case notFound(service: BluetoothUUID, target: BDAddress?, timeout: Duration)
    /// The peer has no such service.
    case missingService(BluetoothUUID)
    /// The service lacks a characteristic the system needs.
    case missingCharacteristic(BluetoothUUID)
    /// The peer went quiet: nothing arrived for this long while a reply or notification was due.
    case silent(waitingFor: String, limit: Duration)
    /// The peer's framed stream broke (docs/SYSTEMS.md S1: reject, do not crash).
    case malformedReply(FrameError)
    /// The echo server answered a `U` frame with a `T` frame: its error message.
    case serverError(String)
    /// The link went down before the flow was done.
    case disconnected(HCIStatus, while: String)

    /// The message shown to the user.
    public var description: String {
        switch self {
        case let .notPoweredOn(state): return "Bluetooth is \(state), not poweredOn"
        case let .notFound(service, target, timeout):
            let which = target.map { "\($0) advertising \(service)" } ?? "no device advertising \(service)"
            return "not found: \(target == nil ? which : "no " + which) within \(NumberText.spacedSeconds(timeout))"
        case let .missingService(uuid): return "the peer has no service \(uuid)"
        case let .missingCharacteristic(uuid): return "the peer's service has no characteristic \(uuid)"
        case let .silent(what, limit): return "timed out: no \(what) for \(NumberText.spacedSeconds(limit))"
        case let .malformedReply(error): return "malformed reply: \(error)"
        case let .serverError(text): return "the server answered: \(text)"
        case let .disconnected(reason, what): return "disconnected (\(reason)) while \(what)"
        }
    }
}

/// Scans for a device advertising `service` (Central.scan reports each device once unless its
/// data changes: docs/SYSTEMS.md S2's "without duplicates"), taking the first one, or the first with
/// address `target`. The scan stops on the radio as soon as one is found, or at `timeout`.
public func findAdvertiser(of service: BluetoothUUID, target: BDAddress?, using central: Central,
                    timeout: Duration) async throws -> ScannedDevice {
    for try await device in central.scan(filter: ScanFilter(serviceUUIDs: [service]), timeout: timeout) {
        if let target, device.address.address != target { continue }
        await central.stopScan()
        return device
    }
    try Task.checkCancellation()
    throw CentralFlowError.notFound(service: service, target: target, timeout: timeout)
}

/// A service and its characteristics, as a flow discovered them.
public struct DiscoveredService: Sendable {
    /// The service.
    public let service: GATTService
    /// All its characteristics.
    public let characteristics: [GATTCharacteristic]

    /// The characteristic with `uuid`, or `.missingCharacteristic`.
    public func characteristic(_ uuid: BluetoothUUID) throws(CentralFlowError) -> GATTCharacteristic {
        guard let c = characteristics.first(where: { $0.uuid == uuid }) else { throw .missingCharacteristic(uuid) }
        return c
    }
}

/// Discovers `service` by UUID and all its characteristics (Vol 3 Part G §4.4.2, §4.6.1).
public func discover(_ service: BluetoothUUID, on peripheral: Peripheral) async throws -> DiscoveredService {
    guard let found = try await peripheral.discoverServices([service]).first else {
        throw CentralFlowError.missingService(service)
    }
    return DiscoveredService(service: found, characteristics: try await peripheral.discoverCharacteristics(for: found))
}

/// Exchanges the ATT MTU (Vol 3 Part G §4.3.1); a peer that refuses keeps ATT_MTU 23.
public func exchangeMTU(_ preferred: Int, on peripheral: Peripheral) async throws {
    guard preferred > 23 else { return }
    do {
        _ = try await peripheral.exchangeMTU(preferred)
    } catch BLEError.gatt(.att) {
        // Request Not Supported: the link stays at the default ATT_MTU.
    }
}

/// Disconnects in a task of its own, so that it also happens when the flow was cancelled
/// (Ctrl-C): the peer sees Remote User Terminated Connection, not a supervision timeout.
func disconnectEvenIfCancelled(_ peripheral: Peripheral, clock: any BLEClock) async {
    guard peripheral.state == .connected else { return }
    await Task(executorPreference: clock.taskExecutor) { try? await peripheral.disconnect() }.value
}

/// Takes the notified `values` of `characteristic` until `limit` of them count (then turns
/// notifications off), the stream ends because the link went down (`linkDown`), or the task is
/// cancelled. `start` is what was counted before (over earlier connections); `decoded` shows each
/// value and says whether it counts (a malformed one does not). A peer that stays connected but
/// stops sending would keep a `--count` waiting for ever: after `silenceLimit` without a
/// notification this ends with `CentralFlowError.silent` (`what` names what was due).
func countNotifications(_ values: NotificationStream, of characteristic: GATTCharacteristic, on peripheral: Peripheral,
                        clock: any BLEClock, start: Int = 0, limit: Int?, silenceLimit: Duration, waitingFor what: String,
                        decoded: @escaping @Sendable ([UInt8]) -> Bool) async throws -> (count: Int, linkDown: Bool) {
    let watchdog = SilenceWatchdog(clock: clock, limit: silenceLimit, waitingFor: what)
    return try await withWatchdog(watchdog) {
        var count = start
        for await value in values {
            watchdog.touch()
            if decoded(value) { count += 1 }
            if let limit, count >= limit {
                try? await peripheral.setNotifyValue(false, for: characteristic)
                return (count, false)
            }
        }
        try Task.checkCancellation()
        return (count, true)
    }
}
