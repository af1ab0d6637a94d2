#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEVirtual
import BLEProfiles
import BLESystems
import BLEWire
import Dispatch

/// `ble serve PROFILE`: runs a peripheral until interrupted or for `--duration`.
struct ServeCommand: BLECommand {
    static let name = "serve"
    static let abstract = "Run a peripheral: advertise, serve GATT, log connections and requests."
    static let positionals: [CommandPositional] = [.required("PROFILE", help: "what to serve: one of the PROFILES below")]
    static let options: [CommandOption] = [
        .single("name", value: "NAME", help: "device name (advertised and in the GAP service; default SwiftBLE)"),
        .single("address", value: "ADDR", help: "a static random address XX:XX:XX:XX:XX:XX (top two bits set) or 'public' (default: the stored identity address when --bonds or $BLE_BONDS names the bond store, else public)"),
        .single("duration", value: "S", help: "stop after S seconds (default: until interrupted)"),
        .flag("json", help: "one JSON object per event"),
        .flag("no-advertise", help: "start without advertising (on a terminal, key 'a' switches it on and off)"),
        .single("source", value: "sim|FILE|-", help: "accel: samples from 'sim' (simulated motion, default), a FILE of \"x y z\" lines, or '-' (stdin)"),
        .single("files", value: "DIR", help: "echo: answer file:// URLs with the regular files under DIR (default: file:// refused)"),
        .single("l2cap", value: "PSM", help: "also accept LE credit-based L2CAP channels on PSM (1...255) and echo every SDU back"),
        .flag("eatt", help: "offer Enhanced ATT: Server Supported Features says EATT, and ATT bearers on SPSM 0x0027 are accepted on encrypted links"),
        .flag("extended", help: "advertise as a connectable extended set (Bluetooth 5): data and scan response in one, no 31-octet limit"),
        .single("phy", value: "1m|coded", help: "with --extended: the advertising PHY, primary and secondary (default 1m; coded for long range)"),
    ]
    /// Serves until interrupted or --duration, then stops advertising and disconnects in order.
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio, .handlesInterrupts, .pairing]
    static var discussion: String {
        "PROFILES:\n" + serveProfiles.map { "  \($0.name.padding(12))\($0.summary)" }.joined(separator: "\n")
            + "\n\nAfter a central disconnects the profile advertises again and accepts the next connection."
            + "\nOn a terminal, press 'a' to switch advertising off and on (not with --source -, which reads stdin)."
            + "\ntest changes its database on a write of \"db-change\" to its write-only characteristic (8f3c0005) or on"
            + "\n  SIGUSR1: it adds service 8f3c000c after the last handle, or removes it again (new Database Hash,"
            + "\n  Service Changed to the clients that enabled it, Database Out Of Sync to change-unaware ones); each"
            + "\n  change is logged; signals sent close together may count once, so wait for each line. Other"
            + "\n  profiles log SIGUSR1 and ignore it."
            + "\naccel advertises as \"\(AccelerometerProfile.localName)\" unless --name is given, and notifies only while a central is subscribed."
            + "\n\necho fetches the URL of every U frame itself, for any central in radio range (no pairing):"
            + "\n  http and https reach whatever this machine can reach, internal addresses included (localhost,"
            + "\n  the LAN, a cloud metadata service): run it only where that is acceptable."
            + "\n  file:// URLs are refused unless --files DIR is given; then only regular files under DIR are"
            + "\n  served (symlinks resolved, nothing outside DIR, no FIFOs, devices or directories), 4 MiB at most."
    }

    var controller: ControllerOptions
    var profile: String
    var deviceName: String
    var address: OwnAddress?
    var duration: Duration?
    var json: Bool
    var advertise: Bool
    var l2capPSM: UInt16?
    var eatt: Bool
    /// `--extended`: the connectable extended set's parameters.
    var extended: AdvertisingSetParameters?
    var arguments: ParsedArguments

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
        guard serveProfiles.contains(where: { $0.name == args.positionals[0] }) else {
            throw UsageError("unknown profile '\(args.positionals[0])': choose \(serveProfiles.map(\.name).joined(separator: ", "))")
        }
        profile = args.positionals[0]
        deviceName = args.option("name") ?? (profile == AccelerometerServeProfile.name ? AccelerometerProfile.localName : "SwiftBLE")
        guard args.option("source") == nil || profile == AccelerometerServeProfile.name else { throw UsageError("--source applies to the accel profile only") }
        guard args.option("files") == nil || profile == EchoServeProfile.name else { throw UsageError("--files applies to the echo profile only") }
        guard deviceName.utf8.count <= 248 else { throw UsageError("--name is limited to 248 bytes (GAP Device Name)") }
        switch args.option("address") {
        case nil: address = nil
        case "public"?: address = .public
        case let text?:
            guard let a = BDAddress(string: text) else { throw UsageError("--address expects XX:XX:XX:XX:XX:XX or public") }
            guard a.randomKind == .staticRandom else { throw UsageError("\(a) is not a static random address: its two top bits must be 1 (e.g. C0:...)") }
            address = .staticRandom(a)
        }
        guard address == nil || controller.security.privacyRotation == nil else { throw UsageError("--address and --privacy exclude each other") }
        duration = try args.seconds("duration")
        json = args.flag("json")
        advertise = !args.flag("no-advertise")
        l2capPSM = try args.option("l2cap").map(L2capCommand.psm)
        eatt = args.flag("eatt")
        if args.flag("extended") {
            let phy = try args.option("phy").map { try AdvertiseCommand.phy($0, "--phy", allowed: ["1m", "coded"]) } ?? .le1M
            extended = AdvertisingSetParameters(kind: .connectable, primaryPHY: phy, secondaryPHY: phy, continueWhileConnected: true, restartAfterDisconnect: true)
        } else if args.option("phy") != nil {
            throw UsageError("--phy goes with --extended (legacy advertising is on LE 1M)")
        }
        guard !(eatt && l2capPSM == 0x27) else { throw UsageError("--l2cap 0x27 and --eatt exclude each other: SPSM 0x0027 is Enhanced ATT's") }
        arguments = args
    }

    func run() async throws {
        switch profile {
        case HeartRateServeProfile.name: try await serve(HeartRateServeProfile.self)
        case BatteryServeProfile.name: try await serve(BatteryServeProfile.self)
        case EchoServeProfile.name: try await serve(EchoServeProfile.self)
        case SampleServeProfile.name: try await serve(SampleServeProfile.self)
        case AccelerometerServeProfile.name: try await serve(AccelerometerServeProfile.self)
        default: try await serve(TestServeProfile.self)
        }
    }

    private func serve<P: ServeProfile>(_ type: P.Type) async throws {
        let log = ServeLog(json: json)
        var instance = P()
        do {
            try instance.configure(ServeProfileOptions(source: arguments.option("source"), files: arguments.option("files")))
        } catch let refused as ServeOptionError {
            throw UsageError(refused.description)
        }
        // Stdin has one reader: the profile's (`--source -`, and then nothing is asked), or the
        // terminal's keys, which answer pairing questions while one waits and are commands
        // otherwise. No other reader may take the answers.
        let keyboard = instance.usesStandardInput ? nil : KeyboardKeys()
        defer { keyboard?.restore() }
        let prompts = LinePrompts()
        let security = controller.security
        let store = try security.bondStore()
        var configuration = HostConfiguration()
        configuration.offersEnhancedATT = eatt
        configuration.security = security.settings(store: store, prompts: keyboard == nil ? nil : prompts) { text in
            log.line("pairingPrompt", [("text", .string(text))], text: text)
        }
        let own = try address ?? security.ownAddress(store: store, identity: security.bondsNamed)
        let manager = try await PeripheralManager.open(transport: Controllers.open(spec: controller.hci, capture: controller.capture), name: deviceName,
                                                       address: own, configuration: configuration)
        let events = await manager.events
        let (data, response) = instance.advertisement(name: deviceName)
        let advertising = AdvertisingSwitch(manager: manager, data: extended == nil ? data.shorteningLocalName(toFit: AdvertisingData.legacyLimit) : data,
                                            scanResponse: response, extended: extended, wanted: advertise)
        var l2cap: L2CAPListener?
        do {
            try await instance.install(on: manager)
            if let psm = l2capPSM { l2cap = try await manager.listenL2CAP(psm: psm) }
            if advertise { try await advertising.start() }
        } catch {
            await manager.close()
            throw error
        }
        // SIGUSR1 asks the profile to change its database; caught (Dispatch's source registered)
        // before "ready", so one sent as soon as it shows is delivered, not lost or fatal.
        let databaseChangeSignals = await signalArrivals(SIGUSR1)
        let serving = await manager.address
        log.line("ready", [("profile", .string(P.name)), ("name", .string(deviceName)), ("address", .optional(serving.map { $0.address.description })),
                           ("addressType", .optional(serving.map { $0.type == .public ? "public" : "random" }))],
                 text: "serving \(P.name) as \"\(deviceName)\" at \(serving.map { "\($0)" } ?? "?")")
        if !advertise { log.line("advertising", [("enabled", .bool(false))], text: "not advertising (--no-advertise)") }
        if let set = advertising.runningSet {
            log.line("advertisingSet", [("set", .int(Int(set.handle))), ("sid", .int(Int(set.sid))), ("extended", .bool(true)),
                                        ("primaryPHY", .string(AdvertiseCommand.phyName(extended?.primaryPHY ?? .le1M)))],
                     text: "advertising as extended \(set) on \(extended?.primaryPHY ?? .le1M)")
        }
        let profile = instance
        let limit = duration
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { log.log(event) }
            }
            group.addTask {
                do { try await profile.run(on: manager, log: log) } catch {}
            }
            if let l2cap = l2cap {
                log.line("l2cap", [("psm", .int(Int(l2cap.psm)))], text: "echoing L2CAP channels on PSM \(l2cap.psm)")
                group.addTask { await serveL2CAPEcho(l2cap, log: log) }
            }
            group.addTask {
                await waitForInterrupt(limit: limit)
            }
            group.addTask {
                for await _ in databaseChangeSignals where !profile.requestDatabaseChange(.signal("SIGUSR1")) {
                    log.line("databaseChanged", [("trigger", .string("signal")), ("signal", .string("SIGUSR1")),
                                                 ("error", .string("the \(P.name) profile has no database change"))],
                             text: "SIGUSR1 ignored: the \(P.name) profile has no database change")
                }
            }
            if let keyboard {
                log.line("keys", [("toggleAdvertising", .string("a"))], text: "press 'a' to switch advertising off and on")
                group.addTask {
                    let (commands, sink) = AsyncStream<UInt8>.makeStream()
                    await withTaskGroup(of: Void.self) { keys in
                        keys.addTask { await routeKeys(keyboard.keys, prompts: prompts, commands: sink) }
                        keys.addTask { await advertising.toggle(on: commands, log: log) }
                    }
                }
            }
            // The first of: an interrupt, the duration, or the controller going away.
            group.addTask {
                while !Task.isCancelled, await manager.state == .poweredOn {
                    do { try await Task.sleep(for: .milliseconds(200)) } catch { return }
                }
            }
            await group.next()
            group.cancelAll()
        }
        try? await advertising.stop()
        for central in await manager.connectedCentrals {
            try? await manager.disconnect(central)
        }
        await manager.close()
    }
}


/// Echoes every SDU of every channel `listener` yields, logging each channel's opening and end.
private func serveL2CAPEcho(_ listener: L2CAPListener, log: ServeLog) async {
    await withTaskGroup(of: Void.self) { channels in
        for await channel in listener {
            log.line("l2capChannel", [("peer", .string(channel.peer.description)), ("psm", .int(Int(channel.psm))),
                                      ("peerMTU", .int(channel.peerMTU)), ("peerMPS", .int(Int(channel.info.remote.mps)))],
                     text: "L2CAP channel from \(channel.peer): \(channel.info)")
            channels.addTask {
                do {
                    let totals = try await L2CAPDescriptorPipe.echo(channel)
                    log.line("l2capClosed", [("bytes", .int(totals.received)), ("sdus", .int(totals.sdusReceived))],
                             text: "L2CAP channel closed: echoed \(totals.received) bytes in \(totals.sdusReceived) SDUs")
                } catch {
                    log.line("l2capClosed", [("error", .string("\(error)"))], text: "L2CAP channel ended: \(error)")
                }
            }
        }
    }
}

/// Hands the terminal's keys to the current pairing question while one waits (a line, echoed on
/// stderr), and to `commands` otherwise; at the end of stdin the questions get no more answers.
private func routeKeys(_ keys: AsyncStream<UInt8>, prompts: LinePrompts, commands: AsyncStream<UInt8>.Continuation) async {
    var line = TerminalKeyLine()
    for await byte in keys {
        for output in line.take(byte, turn: prompts.turn) {
            switch output {
            case let .key(key): commands.yield(key)
            case let .echo(text): _ = text.withCString { write(2, $0, strlen($0)) }
            case let .line(text, turn): prompts.deliver(text, turn: turn)
            }
        }
    }
    prompts.deliver(nil)
    commands.finish()
}

extension AdvertisingSwitch {
    /// Toggles on each `a` until the keys end. A failure is logged, not fatal.
    func toggle(on keys: AsyncStream<UInt8>, log: ServeLog) async {
        for await key in keys where key == UInt8(ascii: "a") || key == UInt8(ascii: "A") {
            do {
                try await toggle()
            } catch {
                log.line("advertising", [("error", .string("\(error)"))], text: "advertising could not be switched: \(error)")
            }
        }
        // Stdin ended: keep serving until the interrupt or --duration ends the group.
        await waitForInterrupt(limit: nil)
    }
}
