import BLEMQTT
import BLESystems

/// What `ble gateway` and `ble ui --broker` read alike: the broker URL, `--username`,
/// `--password-file` (a refusal as a usage error, warnings as `command` says them) and `--ca`,
/// with a warning when a password would cross the network in the clear.
enum BrokerConnectionOptions {
    /// The connection `brokerText` and `args` describe, as client `clientID`.
    static func configuration(broker brokerText: String, _ args: ParsedArguments, clientID: String,
                              command: String) throws -> MQTTConfiguration {
        let broker: MQTTBrokerURL
        do { broker = try MQTTBrokerURL(parsing: brokerText) } catch { throw UsageError("--broker: \(error)") }
        var mqtt = MQTTConfiguration(broker: broker, clientID: clientID)
        mqtt.username = args.option("username")
        if let file = args.option("password-file") {
            do {
                mqtt.password = try BrokerPasswordFile.read(file) { standardError("\(command): warning: \($0)") }
            } catch {
                throw UsageError("--password-file: \(error)")
            }
        }
        warnOfCleartextPassword(mqtt, command: command)
        if let ca = args.option("ca") {
            guard broker.usesTLS else { throw UsageError("--ca is for an mqtts:// broker") }
            mqtt.caFile = ca
        }
        return mqtt
    }

    /// A warning when a password is to cross the network in the clear (to a broker that is
    /// not on this machine's loopback).
    static func warnOfCleartextPassword(_ mqtt: MQTTConfiguration, command: String) {
        let host = mqtt.broker.host.lowercased()
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        guard mqtt.password != nil, !mqtt.broker.usesTLS, !loopback else { return }
        standardError("\(command): warning: the password goes to \(mqtt.broker) unencrypted; use mqtts:// (TLS)")
    }
}
