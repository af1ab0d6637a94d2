#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEWire
import Synchronization

/// What `ble serve` prints: one readable line per event, or one JSON object with `--json`.
public struct ServeLog: Sendable {
    /// Whether lines are JSON objects (`--json`, for programs) rather than text for people.
    public let json: Bool
    /// Where each finished line goes: stdout by default; tests and the demo collect them (or
    /// drop them: `ServeLog.silent`).
    public var output: @Sendable (String) -> Void
    /// Takes each event in both forms instead of `output` (`ble ui`'s /serve screen shows the
    /// line and keeps the fields).
    private var both: (@Sendable (_ json: String, _ text: String) -> Void)?

    /// A log in the given form, writing each line to `output` (stdout, flushed, by default so a
    /// pipe sees each event as it happens).
    public init(json: Bool, output: @escaping @Sendable (String) -> Void = { text in
        print(text)
        flushOutput()
    }) {
        self.json = json
        self.output = output
    }

    /// A log that hands each event to `lines` as its JSON object and its line for people.
    public init(lines: @escaping @Sendable (_ json: String, _ text: String) -> Void) {
        self.json = true
        self.output = { _ in }
        self.both = lines
    }

    /// A log that prints nothing (the demo world's peripherals run silently).
    public static let silent = ServeLog(json: false, output: { _ in })

    /// One event: `fields` under `"event": event` with `--json`, else `text`.
    public func line(_ event: String, _ fields: [(String, JSON)], text: String) {
        if let both {
            both(JSON.object([("event", .string(event))] + fields).text, text)
            return
        }
        output(json ? JSON.object([("event", .string(event))] + fields).text : text)
    }

    /// The peripheral manager's own events (connections, requests, subscriptions), as lines.
    public func log(_ event: PeripheralManagerEvent) {
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
        case let .paired(c, r):
            line("paired", central(c) + [("secureConnections", .bool(r.secureConnections)), ("method", .string(r.method.rawValue)),
                                         ("keySize", .int(r.keySize)), ("securityLevel", .int(r.securityLevel.rawValue)),
                                         ("bonded", .bool(r.bonded)), ("keysSent", .array(r.keysSent.names.map { .string($0) })),
                                         ("keysReceived", .array(r.keysReceived.names.map { .string($0) }))],
                 text: "paired: \(c.address) \(r)\(r.bonded ? " (keys stored: sent \(r.keysSent.names.joined(separator: ",")), received \(r.keysReceived.names.joined(separator: ",")))" : "")")
        case let .pairingFailed(c, error):
            line("pairingFailed", central(c) + [("error", .string("\(error)"))] + (error.reason.map { [("reason", JSON.int(Int($0.rawValue)))] } ?? []),
                 text: "pairing failed: \(c.address) \(error)")
        case .advertisingStarted:
            line("advertising", [("enabled", .bool(true))], text: "advertising")
        case .advertisingStopped:
            line("advertising", [("enabled", .bool(false))], text: "advertising stopped")
        case let .advertisingFailed(reason):
            line("advertising", [("enabled", .bool(false)), ("error", .string(reason))], text: "advertising could not restart: \(reason)")
        case let .advertisingSetTerminated(t):
            logTermination(t)
        }
    }

    /// An advertising set's end: the connection made from it, or its timeout or event limit.
    func logTermination(_ t: AdvertisingSetTermination) {
        var fields: [(String, JSON)] = [("set", .int(Int(t.set))), ("events", .int(t.completedEvents)), ("restarting", .bool(t.restarting))]
        let why: String
        switch t.reason {
        case let .connected(c):
            fields += central(c)
            why = "connected: \(c.address)"
        case .timeout: why = "duration ended"
        case .limitReached: why = "event limit reached"
        case let .failed(status): why = "\(status)"
        }
        line("setTerminated", fields + [("reason", .string(why))], text: "set \(t.set) ended: \(why)\(t.restarting ? " (advertising again)" : "")")
    }

    /// The fields that name a central in every line about it.
    public func central(_ c: ConnectedCentral) -> [(String, JSON)] {
        [("central", .string(c.address.address.description)), ("connection", .int(Int(c.id)))]
    }
}
