import BLE
import BLESystems
import Synchronization

/// `ble sync ADDRESS SID`: syncs to a set's periodic advertising and prints each advertisement
/// of its train, until the sync is lost, `--count` were printed, or an interrupt.
struct SyncCommand: BLECommand {
    static let name = "sync"
    static let abstract = "Sync to periodic advertising and print its reports."
    static let positionals: [CommandPositional] = [
        .address,
        .required("SID", help: "the advertising set's SID, 0...15 (ble scan shows it)"),
    ]
    static let options: [CommandOption] = [
        .single("count", value: "N", help: "stop after N periodic advertisements (default: until the sync is lost or interrupted)"),
        .single("timeout", value: "S", help: "give up when no sync is made within S seconds, finding the address's type included (default 10)"),
        .single("sync-timeout", value: "S", help: "the sync is lost after S seconds without a periodic advertisement, 0.1...163 (default 5)"),
        .flag("json", help: "one JSON object per line: synced, then periodic with data as hex and the decoded fields"),
        .flag("stop-scan", help: "stop scanning once synced (the spec allows it; rootcanal 1.10 then reports nothing more)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .handlesInterrupts]
    static let discussion = """
    Needs a Bluetooth 5 controller with periodic advertising sync. The sync is made from a
    passive scan (on --phy) that hears the set's extended advertisement, and goes on while
    synced unless --stop-scan (some controllers report only while they scan); each periodic
    advertisement is printed whole (a chain of reports is put together first), marked when the
    controller could not receive all of it. A lost sync ends the command with status 1; Ctrl-C
    ends the sync on the controller, then the command.
    """

    var controller: ControllerOptions
    var target: AddressArgument
    var sid: UInt8
    var count: Int?
    var timeout: Duration
    var syncTimeout: Duration
    var json: Bool
    var keepScanning: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        target = try AddressArgument(args.positionals[0])
        guard let sid = UInt8(args.positionals[1]), sid <= 15 else { throw UsageError("SID must be 0...15, not '\(args.positionals[1])'") }
        self.sid = sid
        if let text = args.option("count") {
            guard let n = Int(text), n > 0 else { throw UsageError("--count expects a positive number, not '\(text)'") }
            count = n
        }
        timeout = try args.seconds("timeout") ?? .seconds(10)
        syncTimeout = try args.seconds("sync-timeout") ?? .seconds(5)
        json = args.flag("json")
        keepScanning = !args.flag("stop-scan")
    }

    func run() async throws {
        let log = ServeLog(json: json)
        let central = try await controller.openCentral(target: target)
        let made = MadeSync()
        let outcome: Result<Void, Error>? = await withTaskGroup(of: Result<Void, Error>?.self) { group in
            group.addTask {
                do {
                    try await follow(central, log: log) { sync in made.sync.withLock { $0 = sync } }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            // Ctrl-C or SIGTERM: the sync ends on the controller, then the command, with status 0.
            group.addTask { await waitForInterrupt(limit: nil) ? nil : .success(()) }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let sync = made.sync.withLock({ $0 }) { await sync.terminate() }
        await central.close()
        if case let .failure(error)? = outcome { throw error }
    }

    /// Resolves the address, syncs (both within `--timeout`), and prints the train until
    /// `--count` or its loss.
    private func follow(_ central: Central, log: ServeLog, made: (PeriodicSync) -> Void) async throws {
        let start = central.clock.now()
        let address = try await target.resolve(using: central, timeout: timeout)
        let remaining = max(timeout - (central.clock.now() - start), .milliseconds(100))
        let sync = try await central.syncToPeriodicAdvertising(of: address, sid: sid, timeout: remaining, supervisionTimeout: syncTimeout,
                                                                keepScanning: keepScanning)
        made(sync)
        log.line("synced", [("address", .string(sync.advertiser.address.description)), ("sid", .int(Int(sync.sid))),
                            ("phy", .string(AdvertiseCommand.phyName(sync.phy))),
                            ("intervalMicroseconds", .int(intervalMicroseconds(sync.interval)))],
                 text: "synced to \(sync.advertiser) SID \(sync.sid) on \(sync.phy), every \(AdvertiseCommand.milliseconds(sync.interval)) ms")
        var received = 0
        do {
            for try await advertisement in sync {
                received += 1
                let hex = advertisement.bytes.hexString
                var fields: [(String, JSON)] = [("data", .string(hex)), ("length", .int(advertisement.bytes.count)),
                                                ("truncated", .bool(advertisement.truncated))]
                if let rssi = advertisement.rssi { fields.append(("rssi", .int(Int(rssi)))) }
                if let tx = advertisement.txPower { fields.append(("txPower", .int(Int(tx)))) }
                if let name = advertisement.data.localName { fields.append(("name", .string(name))) }
                let summary = advertisement.data.summary
                log.line("periodic", fields,
                         text: "\(advertisement.bytes.count) octets\(advertisement.truncated ? " (truncated)" : "") \(hex)\(summary.isEmpty ? "" : "\n  \(summary)")")
                if let count, received >= count { return }
            }
        } catch BLEError.periodicSyncLost(let what) {
            log.line("syncLost", [("received", .int(received))], text: "sync lost after \(received) periodic advertisement(s)")
            throw BLEError.periodicSyncLost(what)
        }
    }
}

/// The sync `ble sync` made, for its end after an interrupt.
private final class MadeSync: Sendable {
    let sync = Mutex<PeriodicSync?>(nil)
}

/// A duration in whole microseconds.
private func intervalMicroseconds(_ d: Duration) -> Int {
    let parts = d.components
    return Int(parts.seconds) * 1_000_000 + Int(parts.attoseconds / 1_000_000_000_000)
}
