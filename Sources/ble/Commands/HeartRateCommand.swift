import BLE
import BLEProfiles
import BLESystems
import BLEWire

/// `ble heart-rate [ADDRESS]`: the heart-rate monitor of docs/SYSTEMS.md S3 (`HeartRateMonitor`).
struct HeartRateCommand: BLECommand {
    static let name = "heart-rate"
    static let abstract = "Heart-rate monitor: scan for 180D, connect to the strongest (or ADDRESS), show live measurements."
    static let positionals: [CommandPositional] = [.optional("ADDRESS")]
    static let options: [CommandOption] = [
        mtuOption,
        .single("min-rssi", value: "DBM", help: "refuse monitors heard weaker than DBM (default -70)"),
        .single("count", value: "N", help: "stop after N measurements and exit 0"),
        .flag("json", help: "one {\"bpm\",\"contact\",\"energyKJ\",\"rrIntervals\"} object per measurement (RR in seconds), nothing else on stdout"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]
    static let discussion = """
    Scans continuously for the Heart Rate service (180D) and lists the monitors heard (name or
    "unnamed device", RSSI, age, advertisement); one not heard for 10 s drops off. It connects to
    the strongest, reads Body Sensor Location and subscribes to Heart Rate Measurement; when the
    monitor disconnects it scans again; one that stays connected but sends no measurement for
    10 s ends the command (status 1).

    Each monitor is judged by the strongest RSSI heard from it over the last second (one
    reading is noise), once it has been on the list for a second: one brought closer passes as
    soon as it is heard strongly enough, one carried away is judged by where it is now. One
    weaker than --min-rssi is refused with its RSSI. Without ADDRESS
    the monitor keeps scanning and connects as soon as one is heard strongly enough; with
    ADDRESS the refusal ends the command with status 1 (you chose that device and it is too far).

    On a terminal the list and then the rate (with a sparkline of recent bpm) are drawn in place;
    otherwise each event is one line. With --json only measurements go to stdout (refusals and
    disconnects are noted on stderr).
    """

    var controller: ControllerOptions
    var monitor: HeartRateMonitorOptions
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        monitor = HeartRateMonitorOptions()
        monitor.mtu = controller.mtu
        if let text = args.positionals.first {
            let target = try AddressArgument(text)
            monitor.target = target.address
            monitor.targetType = target.type
        }
        if let text = args.option("min-rssi") {
            guard let value = Int(text), (-127...20).contains(value) else { throw UsageError("--min-rssi expects dBm between -127 and 20, got '\(text)'") }
            monitor.minimumRSSI = value
        }
        monitor.count = try args.int("count")
        if let count = monitor.count, count <= 0 { throw UsageError("--count must be positive") }
        json = args.flag("json")
    }

    func run() async throws {
        let central = try await controller.openCentral()
        let output = HeartRateMonitorOutput(mode: json ? .json : (TerminalScreen.isStandardOutput ? .live : .plain),
                                            minimumRSSI: monitor.minimumRSSI, clock: central.clock)
        do {
            try await HeartRateMonitor(central: central, options: monitor, emit: output.handle).run()
        } catch {
            output.finish()
            await central.close()
            throw error
        }
        output.finish()
        await central.close()
    }
}
