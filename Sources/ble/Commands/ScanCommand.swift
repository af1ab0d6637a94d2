import BLE
import BLESystems

/// `ble scan`: a live table of advertisers, or JSON lines.
struct ScanCommand: BLECommand {
    static let name = "scan"
    static let abstract = "Scan for advertising devices."
    static let options: [CommandOption] = [
        .single("timeout", value: "S", help: "stop after S seconds (default: run until interrupted)"),
        .repeatable("service", value: "UUID", help: "only devices advertising this service; repeat it or give a comma list for any of several"),
        .single("name", value: "TEXT", help: "only devices whose name contains TEXT (case-insensitive)"),
        .single("min-rssi", value: "DBM", help: "only devices heard at DBM or stronger, e.g. -70"),
        .flag("passive", help: "passive scan: send no scan requests (no scan responses)"),
        .flag("json", help: "one JSON object per line, printed when a device is first heard or its data changes"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio]
    static let discussion = """
    On a terminal the table is redrawn in place; devices not heard for 10 s are dropped.
    Otherwise each newly heard device (or changed advertisement) is printed as one line.
    On a controller with Bluetooth 5's extended scanning commands the scan uses them, and hears
    extended advertisements (long data, the coded PHY) as well as legacy ones.
    """

    var controller: ControllerOptions
    var timeout: Duration?
    var filter: ScanFilter
    var passive: Bool
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        timeout = try args.seconds("timeout")
        var services: [BluetoothUUID] = []
        for list in args.values("service") {
            for part in list.split(separator: ",") {
                guard let u = BluetoothUUID(string: String(part)) else { throw UsageError("'\(part)' is not a UUID") }
                services.append(u)
            }
        }
        var minRSSI: Int?
        if let text = args.option("min-rssi") {
            guard let v = Int(text), (-127...20).contains(v) else { throw UsageError("--min-rssi expects dBm between -127 and 20, got '\(text)'") }
            minRSSI = v
        }
        filter = ScanFilter(serviceUUIDs: services, nameContains: args.option("name"), minimumRSSI: minRSSI, allowDuplicates: true)
        passive = args.flag("passive")
        json = args.flag("json")
    }

    func run() async throws {
        let central = try await controller.openCentral()
        defer { Task { await central.close() } }
        let mode: OutputMode = json ? .json : (TerminalScreen.isStandardOutput ? .live : .plain)
        try await ScanListing.run(central.scan(filter: filter, active: !passive, timeout: timeout), mode: mode, clock: central.clock)
        await central.close()
    }
}
