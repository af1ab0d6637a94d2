import BLEMQTT

/// What `ble-bench gateway` runs: how many gateways, what each one's virtual radio holds, how
/// long it is measured, and which broker it publishes to.
struct GatewayBenchOptions: Sendable {
    /// Gateways, each with a virtual radio of its own.
    var gateways = 3
    /// Advertisers per radio (legacy advertising, distinct addresses and names).
    var advertisers = 200
    /// Notifying GATT servers per radio, each subscribed to by its gateway.
    var notifiers = 4
    /// Notifications per second each notifier sends.
    var rate = 20.0
    /// How long each pass is measured.
    var seconds = 10.0
    /// Each advertiser's advertising interval.
    var advertisingInterval: Duration = .milliseconds(500)
    /// An external broker; nil starts a `mosquitto` of our own.
    var broker: MQTTBrokerURL?

    /// The advertisers whose data changes (one in `changingEvery`), each once a second: faster
    /// than the gateway's rate limit (one publication per device every 2 s) lets through.
    static let changingEvery = 4

    static let usage = """
    usage: ble-bench gateway [--gateways N] [--advertisers N] [--notifiers N] [--rate HZ] [--seconds S]
                             [--adv-interval MS] [--broker mqtt://HOST:PORT]
    """

    /// Reads the options after `gateway`; throws a `GatewayBenchError.usage` naming a bad one.
    init(parsing arguments: [String]) throws(GatewayBenchError) {
        var i = 0
        func value(_ name: String) throws(GatewayBenchError) -> String {
            guard i + 1 < arguments.count else { throw .usage("\(name) needs a value\n\(Self.usage)") }
            i += 1
            return arguments[i]
        }
        func integer(_ name: String, _ range: ClosedRange<Int>) throws(GatewayBenchError) -> Int {
            let text = try value(name)
            guard let n = Int(text), range.contains(n) else {
                throw .usage("\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return n
        }
        func number(_ name: String, _ range: ClosedRange<Double>) throws(GatewayBenchError) -> Double {
            let text = try value(name)
            guard let n = Double(text), n.isFinite, range.contains(n) else {
                throw .usage("\(name) takes a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return n
        }
        while i < arguments.count {
            switch arguments[i] {
            case "gateway": break
            case "--gateways": gateways = try integer("--gateways", 1...64)
            case "--advertisers": advertisers = try integer("--advertisers", 0...2000)
            case "--notifiers": notifiers = try integer("--notifiers", 0...64)
            case "--rate": rate = try number("--rate", 0.1...1000)
            case "--seconds": seconds = try number("--seconds", 1...3600)
            case "--adv-interval": advertisingInterval = .milliseconds(try integer("--adv-interval", 20...10_240))
            case "--broker":
                let text = try value("--broker")
                do {
                    broker = try MQTTBrokerURL(parsing: text)
                } catch {
                    throw .usage("--broker: \(error)")
                }
            default:
                throw .usage("unknown option '\(arguments[i])'\n\(Self.usage)")
            }
            i += 1
        }
    }
}

/// Why `ble-bench gateway` cannot run or went wrong, as one line for the user.
enum GatewayBenchError: Error, CustomStringConvertible {
    /// A bad command line (exit status 2).
    case usage(String)
    /// Something the run needs is missing or failed (exit status 1).
    case failed(String)

    var description: String {
        switch self {
        case let .usage(m), let .failed(m): return m
        }
    }
}
