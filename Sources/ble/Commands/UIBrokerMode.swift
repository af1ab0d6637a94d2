import BLEGateway
import BLEHTTP
import BLEMQTT
import BLESystems
import Foundation

/// `ble ui --broker URL` and the options that go with it: the broker, the gateways' topic
/// prefix, TLS and credentials, read and checked as `ble gateway` reads them.
struct UIBrokerOptions: Sendable {
    /// The broker, its TLS and credentials, and a client identifier for this run.
    var mqtt: MQTTConfiguration
    /// The gateways' topic prefix (`--topic-prefix`, default `ble`).
    var prefix: String

    /// The options of `args`, or nil without `--broker` (then none of its options may be given,
    /// and with it none of the radio's).
    init?(_ args: ParsedArguments) throws {
        guard let brokerText = args.option("broker") else {
            for name in ["topic-prefix", "ca", "username", "password-file"] where args.option(name) != nil {
                throw UsageError("--\(name) goes with --broker")
            }
            return nil
        }
        for name in ["hci", "capture", "min-rssi"] where args.option(name) != nil {
            throw UsageError("--\(name) is for a radio: with --broker, ble ui opens none (the gateways hold the radios)")
        }
        let prefix = args.option("topic-prefix") ?? "ble"
        // The gateways' own rule for a prefix (`GatewayTopics`), with any valid name.
        do { _ = try GatewayTopics(prefix: prefix, name: "ui") } catch { throw UsageError("\(error)") }
        self.prefix = prefix
        mqtt = try BrokerConnectionOptions.configuration(broker: brokerText, args, clientID: UIBrokerApp.makeClientID(), command: "ble ui")
    }
}

extension UICommand {
    /// Broker mode: no controller; the building's screens from the gateways on `options`' broker.
    func runBroker(_ options: UIBrokerOptions) async throws {
        let token = Self.makeToken()
        // Before listening: a configuration libmosquitto refuses (an unreadable CA file) is said
        // before any address is printed.
        let app: UIBrokerApp
        do {
            app = try UIBrokerApp(mqtt: options.mqtt, prefix: options.prefix, token: token)
        } catch {
            throw UsageError("--broker: \(error)")
        }
        let serving = try startServing(token: token)
        standardError("ble ui: watching \(options.prefix)/+/… on \(options.mqtt.broker)")
        app.start()
        await serve(serving) { request in
            if let reply = await app.handle(request) { return reply }
            return .response(.text(.notFound, "no such page\n"))
        }
        app.stop()
    }
}
