#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEHost
import BLEWire
import Synchronization

/// A counter several tasks share (the simulated Energy Expended, values received).
final class Counter: Sendable {
    private let count = Mutex<Int>(0)
    var value: Int { count.withLock { $0 } }
    @discardableResult
    func increment(by n: Int = 1) -> Int { count.withLock { $0 += n; return $0 } }
    func reset() { count.withLock { $0 = 0 } }
}

/// What `ble serve` prints: one readable line per event, or one JSON object with `--json`.
struct ServeLog: Sendable {
    let json: Bool
    /// Where each finished line goes: stdout by default; tests and the demo collect them (or
    /// drop them: `ServeLog.silent`).
    var output: @Sendable (String) -> Void = { text in
        print(text)
        flushOutput()
    }

    /// A log that prints nothing (the demo world's peripherals run silently).
    static let silent = ServeLog(json: false, output: { _ in })

    func line(_ event: String, _ fields: [(String, JSON)], text: String) {
        output(json ? JSON.object([("event", .string(event))] + fields).text : text)
    }

    func log(_ event: PeripheralManagerEvent) {
        switch event {
        case let .connected(c):
            line("connected", central(c), text: "connected: \(c.address)")
        case let .request(c, opcode, handle):
            let name = opcode.name ?? "opcode 0x" + String(opcode.rawValue, radix: 16)
            line("request", central(c) + [("opcode", .string(name))] + (handle.map { [("handle", JSON.int(Int($0)))] } ?? []),
                 text: "request: \(c.address) \(name)\(handle.map { " 0x" + String(format4: $0) } ?? "")")
        case let .disconnected(c, reason):
            line("disconnected", central(c) + [("reason", .int(Int(reason.rawValue))), ("reasonText", .string("\(reason)"))],
                 text: "disconnected: \(c.address) (\(reason))")
        case let .mtuChanged(c, mtu):
            line("mtu", central(c) + [("mtu", .int(mtu))], text: "mtu: \(c.address) \(mtu)")
        case let .subscriptionChanged(c, handle, notifications, indications):
            line("subscription", central(c) + [("handle", .int(Int(handle))), ("notifications", .bool(notifications)), ("indications", .bool(indications))],
                 text: "subscription: \(c.address) 0x\(String(format4: handle)) notify=\(notifications) indicate=\(indications)")
        case let .read(r):
            line("read", central(r.central) + [("handle", .int(Int(r.handle))), ("offset", .int(r.offset))],
                 text: "read: \(r.central.address) 0x\(String(format4: r.handle)) offset \(r.offset)")
        case let .write(w):
            line("write", central(w.central) + [("handle", .int(Int(w.handle))), ("kind", .string("\(w.kind)"))] + valueJSON(w.value),
                 text: "write: \(w.central.address) 0x\(String(format4: w.handle)) \(valueText(w.value))")
        case let .valueWritten(c, handle, value):
            line("write", central(c) + [("handle", .int(Int(handle)))] + valueJSON(value),
                 text: "write: \(c.address) 0x\(String(format4: handle)) \(valueText(value))")
        case let .readyToUpdateSubscribers(c):
            line("readyToUpdate", central(c), text: "ready to update: \(c.address)")
        case let .indicationConfirmed(c, handle):
            line("confirmed", central(c) + [("handle", .int(Int(handle)))], text: "indication confirmed: \(c.address) 0x\(String(format4: handle))")
        case .advertisingStarted:
            line("advertising", [("enabled", .bool(true))], text: "advertising")
        case .advertisingStopped:
            line("advertising", [("enabled", .bool(false))], text: "advertising stopped")
        case let .advertisingFailed(reason):
            line("advertising", [("enabled", .bool(false)), ("error", .string(reason))], text: "advertising could not restart: \(reason)")
        }
    }

    func central(_ c: ConnectedCentral) -> [(String, JSON)] {
        [("central", .string(c.address.address.description)), ("connection", .int(Int(c.id)))]
    }
}
