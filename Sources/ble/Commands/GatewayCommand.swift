import BLE
import BLEGateway
import BLEMQTT
import BLESystems
import Foundation

/// `ble gateway --broker URL`: a central that publishes advertisements and subscribed values to
/// an MQTT broker and takes commands from it (docs/GATEWAY.md, `Gateway`).
struct GatewayCommand: BLECommand {
    static let name = "gateway"
    static let abstract = "Publish what this radio hears to an MQTT broker, and take connect/read/write/subscribe commands from it."
    static let options: [CommandOption] = [
        .single("broker", value: "URL", help: "the broker: mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (TLS, 8883); required"),
        .single("id", value: "NAME", help: "this gateway's name in its topics (default: the host name)"),
        .single("topic-prefix", value: "P", help: "the first topic levels (default ble): topics are P/NAME/…"),
        .single("ca", value: "FILE", help: "the CA certificate (PEM) the broker's is checked against (mqtts; default: the system's)"),
        .single("username", value: "NAME", help: "the broker user name"),
        .single("password-file", value: "FILE", help: "a file whose first line is the broker password (never on the command line)"),
        .single("adv-interval", value: "S", help: "publish a device's changed advertisement at most every S seconds (default 2)"),
        .single("queue", value: "N", help: "notifications queued while the broker is slow or away before newer ones are dropped (default 1000)"),
        .single("in-flight", value: "N", help: "QoS 1 messages sent and not yet acknowledged (default 32)"),
        .single("stats-interval", value: "S", help: "publish status/stats every S seconds (default 10)"),
        .single("max-links", value: "N", help: "links kept at once for commands (default 4)"),
        .single("link-idle", value: "S", help: "close a link with no subscription after S seconds without a command (default 60)"),
        .flag("passive", help: "passive scan: send no scan requests (no scan responses)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing, .handlesInterrupts]
    static let discussion = """
    Topics, under P/NAME/: status (online, retained; offline through the broker's Last Will when the
    gateway dies), status/stats, adv/ADDRESS (one JSON object per advertisement change, retained),
    dev/ADDRESS/CHARACTERISTIC (values of subscribed characteristics), cmd (commands, one JSON
    object each) and reply (their answers, or the MQTT 5 response topic). docs/GATEWAY.md has the
    payloads and every command. Bonds are kept apart from ble's own, under
    $XDG_DATA_HOME/ble/gateway/NAME/bonds, unless --bonds or BLE_BONDS names a directory. Ctrl-C
    stops it (publishing offline first).
    """

    var controller: ControllerOptions
    var configuration: GatewayConfiguration

    init(_ args: ParsedArguments) throws {
        try self.init(args, environment: currentEnvironment())
    }

    init(_ args: ParsedArguments, environment: [String: String]) throws {
        controller = try ControllerOptions(args, listening: true, environment: environment)
        guard let brokerText = args.option("broker") else { throw UsageError("--broker is required, e.g. --broker mqtt://127.0.0.1:1883") }
        let name = args.option("id") ?? GatewayTopics.defaultName(hostName: ProcessInfo.processInfo.hostName)
        let topics: GatewayTopics
        do { topics = try GatewayTopics(prefix: args.option("topic-prefix") ?? "ble", name: name) } catch { throw UsageError("\(error)") }
        let mqtt = try BrokerConnectionOptions.configuration(broker: brokerText, args, clientID: "ble-gateway-\(name)", command: "ble gateway")
        configuration = GatewayConfiguration(topics: topics, mqtt: mqtt)
        if let s = try args.seconds("adv-interval") {
            guard s >= .zero else { throw UsageError("--adv-interval must not be negative") }
            configuration.throttle.interval = s
        }
        if let s = try args.seconds("stats-interval") {
            guard s >= .seconds(1) else { throw UsageError("--stats-interval must be at least 1 second") }
            configuration.statisticsInterval = s
        }
        if let n = try args.int("queue") {
            guard (1...1_000_000).contains(n) else { throw UsageError("--queue must be between 1 and 1000000") }
            configuration.outbox.notifications = n
        }
        if let n = try args.int("in-flight") {
            guard (1...65535).contains(n) else { throw UsageError("--in-flight must be between 1 and 65535") }
            configuration.outbox.inFlight = n
        }
        if let n = try args.int("max-links") {
            guard (1...64).contains(n) else { throw UsageError("--max-links must be between 1 and 64") }
            configuration.maximumLinks = n
        }
        if let s = try args.seconds("link-idle") {
            guard s >= .seconds(1) else { throw UsageError("--link-idle must be at least 1 second") }
            configuration.linkIdleTimeout = s
        }
        configuration.activeScan = !args.flag("passive")
        configuration.mtu = controller.mtu
        configuration.log = { standardError("ble gateway: \($0)") }
        // The gateway's own bonds, apart from the user's (`ble pair`'s), unless --bonds or
        // BLE_BONDS names a directory.
        if !controller.security.bondsNamed, controller.security.bondsDirectory != nil,
           let base = DirectoryBondStore.defaultDirectory(environment: environment) {
            controller.security.bondsDirectory = (base as NSString).deletingLastPathComponent + "/gateway/\(name)/bonds"
        }
    }

    func run() async throws {
        let central = try await controller.openCentral()
        let gateway: Gateway
        do {
            gateway = try Gateway(central: central, configuration: configuration)
        } catch {
            await central.close()
            throw error
        }
        standardError("ble gateway: \(configuration.topics.base) on \(configuration.mqtt.broker)")
        let running = Task { await gateway.run() }
        _ = await waitForInterrupt(limit: nil)
        running.cancel()
        await running.value
        await central.close()
    }
}
