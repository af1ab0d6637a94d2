import BLE
import BLERuntime
import BLESystems
import BLEVirtual

/// `ble bench [OPTIONS] central|peripheral`: throughput and latency, compatible with bumble-bench
/// (Bumble's `apps/bench.py`): the same service, channel, packets, modes, scenarios, options and
/// default addresses, so either end of a run may be either tool. `--hci` replaces bumble-bench's
/// TRANSPORT argument.
struct BenchCommand: BLECommand {
    static let name = "bench"
    static let abstract = "Measure throughput and latency, compatible with bumble-bench."
    static let positionals: [CommandPositional] = [
        .required("ROLE", help: "central (connects; default gatt-client, send) or peripheral (waits; default gatt-server, receive)"),
    ]
    static let options: [CommandOption] = [
        .single("mode", value: "MODE", help: "gatt-client, gatt-server, l2cap-client or l2cap-server"),
        .single("scenario", value: "SCENARIO", help: "send, receive, ping or pong"),
        .single("packet-size", short: "s", value: "SIZE", help: "packet size, 10...8192 (send or ping; default 500)"),
        .single("packet-count", short: "c", value: "COUNT", help: "packets per run (send or ping; default 10)"),
        .single("start-delay", value: "SECONDS", help: "pause before each run (send or ping; default 1; also -sd)"),
        .single("repeat", value: "N", help: "repeat the run N more times (send or ping; default 0)"),
        .single("repeat-delay", value: "SECONDS", help: "pause between runs (default 1)"),
        .single("pace", value: "MILLISECONDS", help: "time between packets (default 0: as fast as the link takes them)"),
        .flag("linger", help: "receive and pong: stay for more runs after the last packet, until the link ends"),
        .single("att-mtu", value: "MTU", help: "ATT MTU to ask for, 23...517 (gatt-client; default 517)"),
        .single("extended-data-length", value: "TX_OCTETS/TX_TIME", help: "ask for this LL data length once connected (the time is ignored)"),
        .single("le-advertise", value: "MILLISECONDS", help: "peripheral: advertising interval (default 100)"),
        .single("l2cap-psm", value: "PSM", help: "L2CAP SPSM, 1...255 (default 128)"),
        .single("l2cap-mtu", value: "N", help: "L2CAP MTU (default 1024)"),
        .single("l2cap-mps", value: "N", help: "L2CAP MPS (default 1024)"),
        .single("l2cap-max-credits", value: "N", help: "L2CAP credits granted to the peer (default 128)"),
        .single("peripheral", value: "ADDRESS_OR_NAME", help: "central: whom to connect to, an address (random unless /public) or a name (default F1:F1:F1:F1:F1:F1)"),
        .single("connection-interval", value: "MILLISECONDS", help: "central: connection interval to ask for (also --ci)"),
        .single("ci", value: "MILLISECONDS", help: "the same as --connection-interval"),
        .single("phy", value: "PHY", help: "central: 1m, 2m or coded, asked for once connected"),
    ]
    static let needs: CommandNeeds = [.controller]
    static let discussion = """
        A run: the sender sends a RESET, then --packet-count packets (1 byte type, 1 byte flags, 4 bytes
        sequence, 4 bytes timestamp, zeros), the last flagged LAST; the receiver acknowledges the last
        (pong: every one). The receiver prints each packet's speed (instant, windowed, average, bytes/s),
        the sender the average speed from the ACK; ping prints round-trip times in ms. The central is
        "Speed Central" at F0:F0:F0:F0:F0:F0, the peripheral "Speed Peripheral" at F1:F1:F1:F1:F1:F1
        (both static random). GATT: service 50DB505C-…, TX E789C754-… (written without response), RX
        016A2CC7-… (notified). L2CAP: PSM 128, MTU 1024, MPS 1024, 128 credits, each packet preceded by
        its length (2 bytes, big-endian).

        EXAMPLE (either line may be bumble-bench with TRANSPORT tcp-client:127.0.0.1:6402 instead of --hci):
          ble bench peripheral --hci tcp:127.0.0.1:6402 &
          ble bench --packet-count 100 central --hci tcp:127.0.0.1:6402
          ble bench --mode l2cap-server --scenario pong peripheral --hci tcp:127.0.0.1:6402 &
          ble bench --mode l2cap-client --scenario ping central --hci tcp:127.0.0.1:6402
        """

    var controller: ControllerOptions
    var configuration: BenchConfiguration

    /// bumble-bench spells the start delay `-sd`, two letters after one dash, which the parser
    /// takes for an unknown short option: it is read as `--start-delay`.
    static func parse(_ arguments: [String]) throws -> ParsedArguments {
        var words: [String] = []
        var afterDashes = false
        for word in arguments {
            if word == "--" { afterDashes = true }
            words.append(!afterDashes && word == "-sd" ? "--start-delay" : word)
        }
        return try ParsedArguments(words, for: signature)
    }

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, attMTU: false)
        guard let role = BenchConfiguration.Role(rawValue: args.positionals[0]) else {
            throw UsageError("ROLE must be central or peripheral, not '\(args.positionals[0])'")
        }
        var c = BenchConfiguration(role: role)
        if let text = args.option("mode") {
            guard let mode = BenchConfiguration.Mode(rawValue: text) else {
                if text.hasPrefix("rfcomm-") || text.hasPrefix("iso-") {
                    throw UsageError("--mode \(text): this stack is LE only and has no isochronous channels; gatt-client, gatt-server, l2cap-client or l2cap-server")
                }
                throw UsageError("--mode must be gatt-client, gatt-server, l2cap-client or l2cap-server, not '\(text)'")
            }
            c.mode = mode
        }
        if let text = args.option("scenario") {
            guard let scenario = BenchScenario(rawValue: text) else { throw UsageError("--scenario must be send, receive, ping or pong, not '\(text)'") }
            c.run.scenario = scenario
        }
        c.run.packetSize = try Self.int(args, "packet-size", 10...8192) ?? c.run.packetSize
        c.run.packetCount = try Self.int(args, "packet-count", 1...Int(UInt32.max)) ?? c.run.packetCount
        c.run.startDelay = try args.seconds("start-delay") ?? c.run.startDelay
        c.run.repeatCount = try Self.int(args, "repeat", 0...1_000_000) ?? c.run.repeatCount
        c.run.repeatDelay = try args.seconds("repeat-delay") ?? c.run.repeatDelay
        if let ms = try args.double("pace") {
            guard ms <= 3_600_000 else { throw UsageError("--pace is at most 3600000 ms") }
            c.run.pace = .microseconds(Int64((ms * 1000).rounded()))
        }
        c.run.linger = args.flag("linger")
        c.attMTU = try Self.int(args, "att-mtu", 23...517) ?? c.attMTU
        if let text = args.option("extended-data-length") {
            guard let first = text.split(separator: "/").first, let octets = Int(first), (27...251).contains(octets) else {
                throw UsageError("--extended-data-length expects TX_OCTETS/TX_TIME with 27...251 octets, e.g. 251/2120, got '\(text)'")
            }
            c.dataLength = octets
        }
        if let ms = try args.double("le-advertise") {
            guard (20...10_240).contains(ms) else { throw UsageError("--le-advertise must be 20...10240 ms") }
            c.advertisingInterval = .microseconds(Int64((ms * 1000).rounded()))
        }
        if let text = args.option("l2cap-psm") { c.psm = try L2capCommand.psm(text) }
        let mtu = try Self.int(args, "l2cap-mtu", 23...65535) ?? Int(c.channelParameters.mtu)
        let mps = try Self.int(args, "l2cap-mps", 23...65533) ?? Int(c.channelParameters.mps)
        let credits = try Self.int(args, "l2cap-max-credits", 1...65535) ?? Int(c.channelParameters.initialCredits)
        c.channelParameters = CreditBasedChannelParameters(mtu: UInt16(mtu), mps: UInt16(mps), initialCredits: UInt16(credits))

        if args.option("connection-interval") != nil, args.option("ci") != nil {
            throw UsageError("give --connection-interval or --ci, not both")
        }
        let centralOnly = ["peripheral", "connection-interval", "ci", "phy"].filter { args.option($0) != nil }
        if role == .peripheral, let first = centralOnly.first {
            throw UsageError("--\(first) applies to the central only")
        }
        if let target = args.option("peripheral") {
            guard !target.isEmpty else { throw UsageError("--peripheral needs an address or a name") }
            c.peripheral = target
        }
        if let ms = try args.double("connection-interval") ?? args.double("ci") {
            guard (7.5...4000).contains(ms) else { throw UsageError("the connection interval must be 7.5...4000 ms") }
            c.connectionInterval = .microseconds(Int64((ms * 1000).rounded()))
        }
        if let text = args.option("phy") {
            switch text.lowercased() {
            case "1m": c.phy = .le1M
            case "2m": c.phy = .le2M
            case "coded": c.phy = .leCoded
            default: throw UsageError("--phy must be 1m, 2m or coded, not '\(text)'")
            }
        }
        configuration = c
    }

    static func int(_ args: ParsedArguments, _ name: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let value = try args.int(name) else { return nil }
        guard range.contains(value) else { throw UsageError("--\(name) must be \(range.lowerBound)...\(range.upperBound), got \(value)") }
        return value
    }

    func run() async throws {
        let transport = try await Controllers.open(spec: controller.hci, capture: controller.capture)
        _ = try await configuration.run(transport: transport, clock: SystemClock()) { line in
            print(line)
            flushOutput()
        }
    }
}
