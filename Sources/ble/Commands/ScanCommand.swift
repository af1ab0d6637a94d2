#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEHost
import BLESystems
import BLEWire

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
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio]
    static let discussion = """
    On a terminal the table is redrawn in place; devices not heard for 10 s are dropped.
    Otherwise each newly heard device (or changed advertisement) is printed as one line.
    """

    var controller: ControllerOptions
    var timeout: Duration?
    var filter: ScanFilter
    var passive: Bool
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
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
        let live = !json && isatty(1) == 1
        var table = ScanTable()
        var printed: [DeviceAddress: AdvertisingData] = [:]
        let clock = central.clock
        var lastDraw = Duration.zero
        let scan = central.scan(filter: filter, active: !passive, timeout: timeout)
        if live {
            // Redraw on a tick as well as on reports, so ages count up and quiet devices drop off.
            for try await update in Self.ticking(scan, every: .milliseconds(250)) {
                if let device = update { table.update(device) }
                let now = clock.now()
                if now - lastDraw >= .milliseconds(250) {
                    lastDraw = now
                    table.draw(now: now)
                }
            }
            table.draw(now: clock.now())
            await central.close()
            return
        }
        for try await device in scan {
            let now = clock.now()
            if json {
                guard printed[device.address] != device.advertisement else { continue }
                printed[device.address] = device.advertisement
                print(Self.json(device).text)
                flushOutput()
            } else {
                guard printed[device.address] != device.advertisement else { continue }
                printed[device.address] = device.advertisement
                print(ScanTable.line(device, now: now))
                flushOutput()
            }
        }
        await central.close()
    }

    /// The scan's devices interleaved with nil ticks every `interval`; ends with the scan.
    static func ticking(_ scan: AsyncThrowingStream<ScannedDevice, any Error>, every interval: Duration) -> AsyncThrowingStream<ScannedDevice?, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ScannedDevice?, any Error>.makeStream()
        let feeder = Task {
            do {
                for try await device in scan { continuation.yield(device) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        let ticker = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                continuation.yield(nil)
            }
        }
        continuation.onTermination = { _ in
            feeder.cancel()
            ticker.cancel()
        }
        return stream
    }

    static func json(_ d: ScannedDevice) -> JSON {
        let ad = d.advertisement
        var fields: [(String, JSON)] = [
            ("address", .string(d.address.address.description)),
            ("addressType", .string(d.address.type == .public || d.address.type == .publicIdentity ? "public" : "random")),
            ("name", .optional(ad.localName)),
            ("rssi", d.rssi.map { .int(Int($0)) } ?? .null),
            ("connectable", .bool(d.isConnectable)),
            ("serviceUUIDs", .array(ad.serviceUUIDs.map { .string($0.description) })),
            ("manufacturerData", ad.manufacturerData.first.map { .string(($0.companyID.littleEndianBytes + $0.data).hexString) } ?? .null),
        ]
        if let m = ad.manufacturerData.first {
            fields.append(("manufacturer", .optional(AssignedNumbers.companyName(m.companyID))))
        }
        if let tx = ad.txPowerLevel { fields.append(("txPower", .int(Int(tx)))) }
        if !ad.serviceData.isEmpty {
            fields.append(("serviceData", .object(ad.serviceData.map { ($0.uuid.description, .string($0.data.hexString)) })))
        }
        if let a = ad.appearance { fields.append(("appearance", .int(Int(a)))) }
        return .object(fields)
    }
}

extension UInt16 {
    var littleEndianBytes: [UInt8] { [UInt8(self & 0xFF), UInt8(self >> 8)] }
}

/// The live table `ble scan` draws on a terminal.
struct ScanTable {
    private var devices: [DeviceAddress: ScannedDevice] = [:]
    static let maximumAge: Duration = .seconds(10)

    mutating func update(_ d: ScannedDevice) { devices[d.address] = d }

    mutating func draw(now: Duration) {
        devices = devices.filter { now - $0.value.lastSeen <= Self.maximumAge }
        var out = "\u{1B}[H\u{1B}[2J"
        out += "NAME                 ADDRESS                  RSSI  AGE   ADVERTISEMENT\n"
        for d in devices.values.sorted(by: { ($0.rssi ?? -128) > ($1.rssi ?? -128) }) {
            out += Self.line(d, now: now) + "\n"
        }
        out += "\n\(devices.count) device(s); Ctrl-C to stop\n"
        print(out, terminator: "")
        flushOutput()
    }

    static func line(_ d: ScannedDevice, now: Duration) -> String {
        let name = pad(d.advertisement.localName ?? "(unnamed)", 20)
        let address = pad("\(d.address.address) \(d.address.type == .public ? "pub" : "rnd")", 24)
        let rssi = pad(d.rssi.map { "\($0)" } ?? "?", 5)
        let age = pad(String(format1: Double((now - d.lastSeen).components.seconds) + Double((now - d.lastSeen).components.attoseconds) / 1e18) + "s", 5)
        return "\(name) \(address) \(rssi) \(age) \(d.advertisement.summary)"
    }

    static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? String(s.prefix(n)) : s + String(repeating: " ", count: n - s.count)
    }
}

extension String {
    /// One decimal place, without Foundation's formatter.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }
}
