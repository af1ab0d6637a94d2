import BLE
import BLESystems
import BLEVirtual
import BLEWire

/// `ble radio --listen tcp:HOST:PORT`: the virtual radio as a server, in the manner of
/// rootcanal's HCI port. Each TCP connection is a new virtual LE controller on
/// one shared medium, so `ble --hci tcp:...` processes and Bumble hosts
/// (`tcp-client:HOST:PORT`) find and connect to each other with no hardware.
struct RadioCommand: BLECommand {
    static let name = "radio"
    static let abstract = "Serve a virtual LE radio over TCP: each connection is a new controller."
    static let options: [CommandOption] = [
        .single("listen", value: "tcp:HOST:PORT", help: "where hosts connect (H4 over TCP); port 0 picks a free port, printed on start", isRequired: true),
        .flag("json", help: "one JSON object per event"),
        .flag("no-air-time", help: "carry ACL data at once instead of in timed connection events"),
        .single("profile", value: "NAME", help: "what each controller is: 4.0, 4.2, 5.0 or default (the most capable); see ble info"),
    ]
    /// It is the radio others' controllers are on, and serves until interrupted.
    static let needs: CommandNeeds = [.handlesInterrupts]
    static var discussion: String {
        """
        Each controller gets its own public address (00:5A:B1:xx:xx:xx, counting up). A host that
        disconnects takes its controller off the medium: its peers see the link time out. Data moves in
        connection events timed by PHY, interval and data length (the air-time model) unless --no-air-time.
        With --profile, every controller is of that core version: 4.0 (legacy advertising, 27-octet PDUs, no
        controller privacy, two links), 4.2 (Data Length Extension, LL privacy), 5.0 (LE 2M and Coded, two
        extended advertising sets of up to 251 octets) or default (Bluetooth 5.4, everything the radio runs).
        Runs until interrupted (Ctrl-C or SIGTERM).

        EXAMPLE:
          ble radio --listen tcp:127.0.0.1:6402 &
          ble serve test --hci tcp:127.0.0.1:6402 &
          ble scan --hci tcp:127.0.0.1:6402
        """
    }

    var host: String
    var port: UInt16
    var json: Bool
    var airTime: Bool
    var profile: VirtualControllerProfile

    init(_ args: ParsedArguments) throws {
        let text = try args.requiredOption("listen")
        // TransportSpec rejects port 0 (a host cannot connect to it); a listener may ask for it.
        let anyPort = text.hasSuffix(":0")
        let spec: TransportSpec
        do {
            spec = try TransportSpec.parse(anyPort ? String(text.dropLast()) + "1" : text)
        } catch {
            throw UsageError("--listen: \(error)")
        }
        guard case let .tcp(host, port) = spec else {
            throw UsageError("--listen expects tcp:HOST:PORT (e.g. tcp:127.0.0.1:6402), got '\(text)'")
        }
        self.host = host
        self.port = anyPort ? 0 : port
        json = args.flag("json")
        airTime = !args.flag("no-air-time")
        do {
            profile = try args.option("profile").map(Controllers.profile(named:)) ?? .current
        } catch {
            throw UsageError("--profile: \(error)")
        }
    }

    func run() async throws {
        let server = try VirtualRadioServer.listen(host: host, port: port)
        let radio = VirtualRadio(airTimeModel: airTime)
        let log = RadioLog(json: json)
        log.listening(server.description, port: server.port)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await server.serve(radio, address: RadioCommand.controllerAddress, configuration: profile.configuration) { session in
                    log.connected(controller: session.number, peer: session.peer, address: session.address)
                } ended: { session, end in
                    log.disconnected(controller: session.number, peer: session.peer, address: session.address, end: end)
                }
            }
            group.addTask { await waitForInterrupt(limit: nil) }
            // The interrupt (or cancellation) ends the accept loop's stream through close().
            _ = await group.next()
            await server.close()
            await radio.shutdown()
            await group.waitForAll()
        }
        log.stopped()
    }

    /// The public BD_ADDR of the `n`th controller: 00:5A:B1 + a 24-bit counter (Core spec Vol 2
    /// Part B §1.2: a public address is a 24-bit company part and a 24-bit device part; this
    /// prefix is not an assigned one, which is fine on a radio that only exists in this process).
    static func controllerAddress(_ n: Int) -> BDAddress {
        BDAddress(rawValue: 0x00_5A_B1_00_00_00 | UInt64(n & 0xFF_FFFF))
    }
}
