/// What can go wrong talking to a broker, as a value a caller can print or match.
public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broker URL could not be used (`MQTTBrokerURL`).
    case invalidURL(String)
    /// A configuration value libmosquitto refused (a client identifier, a CA file, a will).
    case configuration(String)
    /// A call into libmosquitto failed: the operation, its `MOSQ_ERR_*` code and its text.
    case library(operation: String, code: Int32, message: String)
    /// A publish or subscribe while no connection is up.
    case notConnected
    /// The client was stopped.
    case stopped

    public var description: String {
        switch self {
        case let .invalidURL(m): return m
        case let .configuration(m): return m
        case let .library(operation, code, message): return "\(operation) failed: \(message) (libmosquitto error \(code))"
        case .notConnected: return "not connected to the broker"
        case .stopped: return "the MQTT client was stopped"
        }
    }
}
