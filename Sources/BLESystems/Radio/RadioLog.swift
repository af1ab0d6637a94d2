import BLE
import BLEVirtual

/// What `ble radio` prints: a readable line per event, or one JSON object (`"event": NAME` and
/// the event's fields) with `--json`.
public struct RadioLog: Sendable {
    /// Whether lines are JSON objects (`--json`, for programs) rather than text for people.
    public let json: Bool
    /// Where each finished line goes: stdout, flushed, by default (a pipe sees each event at
    /// once); tests collect them.
    public var output: @Sendable (String) -> Void

    /// A log in the given form, writing each line to `output`.
    public init(json: Bool, output: @escaping @Sendable (String) -> Void = { text in
        print(text)
        flushOutput()
    }) {
        self.json = json
        self.output = output
    }

    /// The server is up: `listen` is where hosts connect (`tcp:HOST:PORT`), `port` the port
    /// actually bound (the one the system picked for port 0).
    public func listening(_ listen: String, port: UInt16) {
        line("listening", [("listen", .string(listen)), ("port", .int(Int(port)))],
             text: "virtual radio listening on \(listen)")
    }

    /// A host connected from `peer` and got controller number `controller` with public address `address`.
    public func connected(controller: Int, peer: String, address: BDAddress) {
        line("connected", [("controller", .int(controller)), ("peer", .string(peer)), ("address", .string(address.description))],
             text: "connected: controller \(controller) (\(address)) for \(peer)")
    }

    /// The host on controller `controller` is gone, for the reason `end` gives.
    public func disconnected(controller: Int, peer: String, address: BDAddress, end: VirtualRadio.HostSessionEnd) {
        let reason = Self.reason(end)
        line("disconnected", [("controller", .int(controller)), ("peer", .string(peer)), ("reason", .string(reason))],
             text: "disconnected: controller \(controller) (\(address)): \(reason)")
    }

    /// The server has stopped (interrupted), every session ended.
    public func stopped() {
        line("stopped", [], text: "virtual radio stopped")
    }

    /// Why a host's session ended, in words.
    public static func reason(_ end: VirtualRadio.HostSessionEnd) -> String {
        switch end {
        case .hostClosed: return "host closed the connection"
        case let .hostFailed(error): return "\(error)"
        case .radioClosed: return "radio stopped"
        }
    }

    private func line(_ event: String, _ fields: [(String, JSON)], text: String) {
        output(json ? JSON.object([("event", .string(event))] + fields).text : text)
    }
}
