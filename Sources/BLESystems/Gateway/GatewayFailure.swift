import BLE

/// Why a command that decoded could not be carried out, as its reply says it: a stable `code`
/// and a sentence (docs/GATEWAY.md#errors).
public struct GatewayFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func unknownDevice(_ d: CustomStringConvertible) -> GatewayFailure {
        GatewayFailure(code: "unknown-device", "\(d) has not been heard by this gateway")
    }

    /// Any error of the stack, typed for the reply.
    static func from(_ error: any Error) -> GatewayFailure {
        if let f = error as? GatewayFailure { return f }
        guard let e = error as? BLEError else { return GatewayFailure(code: "failed", "\(error)") }
        switch e {
        case let .gatt(.att(code, _, _)): return GatewayFailure(code: "att-error", "the device refused: \(code)")
        case .gatt: return GatewayFailure(code: "gatt-error", "\(e)")
        case .timeout: return GatewayFailure(code: "timeout", "\(e)")
        case .disconnected, .notConnected: return GatewayFailure(code: "disconnected", "\(e)")
        case .connectionFailed: return GatewayFailure(code: "connection-failed", "\(e)")
        case .security: return GatewayFailure(code: "security", "\(e)")
        case .busy: return GatewayFailure(code: "busy", "\(e)")
        case .unsupported: return GatewayFailure(code: "unsupported", "\(e)")
        case .invalidArgument: return GatewayFailure(code: "invalid", "\(e)")
        default: return GatewayFailure(code: "failed", "\(e)")
        }
    }
}
