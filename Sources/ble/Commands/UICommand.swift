import BLE
import BLEHTTP
import BLESystems
import BLETransport
import Foundation

/// `ble ui`: the seed apps' screens as a local web page, served by this process,
/// which keeps the radio: the device list (`/devices`), a device's GATT screen
/// (`/devices/ADDRESS`), the heart-rate monitor (`/heart-rate`, `/heart-rate/ADDRESS`), the echo
/// and image fetch (`/echo`), the sample central's steps (`/sample`), the accelerometer chart
/// (`/accel`, `/accel/ADDRESS`), the `ble serve` profiles (`/serve`), and the JSON API behind them.
struct UICommand: BLECommand {
    static let name = "ui"
    static let abstract = "Serve a local web page: the live device list, a device's GATT tree with read, write and subscribe, the heart-rate monitor, echo and image fetch, the sample central's steps, the accelerometer chart, and the ble serve profiles."
    static let options: [CommandOption] = [
        .single("listen", value: "HOST:PORT", help: "where to serve (default 127.0.0.1:8765; port 0 picks a free one)"),
        .flag("open", help: "open the page in the desktop's browser (xdg-open), where there is one"),
        .single("min-rssi", value: "DBM", help: "the heart-rate screen refuses monitors heard weaker than DBM (default -70)"),
        .repeatable("allow-host", value: "NAME", help: "also answer requests whose Host is NAME (a name others reach this machine by, e.g. pi.local)"),
        .single("broker", value: "URL", help: "watch the ble gateways of an MQTT broker instead of a radio: mqtt://HOST[:PORT] or mqtts://HOST[:PORT]; opens no controller"),
        .single("topic-prefix", value: "P", help: "with --broker: the gateways' first topic levels (default ble)"),
        .single("ca", value: "FILE", help: "with an mqtts:// --broker: the CA certificate (PEM) the broker's is checked against (default: the system's)"),
        .single("username", value: "NAME", help: "with --broker: the broker user name"),
        .single("password-file", value: "FILE", help: "with --broker: a file whose first line is the broker password (never on the command line)"),
    ]
    // The demo peripherals are installed by `run`, with the picture the echo server serves.
    static let needs: CommandNeeds = [.controller, .listening, .handlesInterrupts]
    static let discussion = """
    The first line of stdout is the page's address with its per-run token: ui: http://HOST:PORT/?token=TOKEN
    Every request needs that token (in the address, or a script's X-BLE-Token header; no cookie) and a Host naming this server;
    requests that change anything are POSTs carrying the token. Bound to loopback unless --listen says
    otherwise. --listen 0.0.0.0:PORT (or [::]:PORT) serves every interface: the Host may then be any of
    this machine's addresses, or a NAME given with --allow-host; the page is plain HTTP, readable by
    anyone on the network path. With --hci virtual the demo peripherals are there to see. Ctrl-C stops it.
    With --broker URL it opens no controller: it watches the `ble gateway`s publishing under P/ (--topic-prefix)
    on that broker, and serves /gateways (every gateway and every device they hear, the strongest gateway
    marked) and the heart-rate and accelerometer screens fed from the gateways' values, whose Subscribe
    button sends the strongest gateway a command.
    """

    var controller: ControllerOptions
    var host: String
    var port: UInt16
    var openBrowser: Bool
    /// `--allow-host` names, lower case.
    var allowedNames: [String]
    /// The heart-rate screen's monitor flow (its RSSI gate).
    var heartRate = HeartRateMonitorOptions()
    /// `--broker` and its options: watch gateways instead of a radio.
    var broker: UIBrokerOptions?

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        let listen = args.option("listen") ?? "127.0.0.1:8765"
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw UsageError("--listen expects HOST:PORT, e.g. 127.0.0.1:8765, not '\(listen)'")
        }
        // An IPv6 address in brackets, in any spelling: its canonical text (`[0::1]` is `::1`,
        // loopback) for binding, the Host check and what is printed.
        let host = HTTPHostName.canonical(String(listen[..<colon]))
        guard !host.isEmpty else { throw UsageError("--listen needs a host, e.g. 127.0.0.1:\(port)") }
        self.host = host
        self.port = port
        openBrowser = args.flag("open")
        allowedNames = try args.values("allow-host").map(Self.allowedName)
        if let text = args.option("min-rssi") {
            guard let value = Int(text), (-127...20).contains(value) else { throw UsageError("--min-rssi expects dBm between -127 and 20, got '\(text)'") }
            heartRate.minimumRSSI = value
        }
        broker = try UIBrokerOptions(args)
    }

    /// An `--allow-host` name: a DNS name or an address without the port (the server's port
    /// is added), an IPv6 one with or without brackets; in the canonical form a `Host` field is
    /// compared in (`HTTPHostName`).
    static func allowedName(_ text: String) throws -> String {
        guard let name = HTTPHostName.hostWithoutPort(text) else {
            throw UsageError("--allow-host expects a host name or address without a port (e.g. pi.local), not '\(text)'")
        }
        return name
    }

    /// 128 random bits as hex, from the system's CSPRNG (getrandom on Linux).
    static func makeToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &rng)) }.joined()
    }

    func run() async throws {
        if let broker {
            try await runBroker(broker)
            return
        }
        let demoFiles = await Self.installDemo(virtual: ControllerOptions.namesVirtualRadio(controller.hci ?? ProcessInfo.processInfo.environment["BLE_HCI"]))
        defer { if let demoFiles { try? FileManager.default.removeItem(atPath: demoFiles.directory) } }
        let central = try await controller.openCentral()
        let serving: UIServing
        do {
            serving = try startServing()
        } catch {
            await central.close()
            throw error
        }
        let token = serving.token
        let app = UIDevicesApp(central: central, token: token)
        app.start()
        let peripherals = UIPeripheralApp(central: central, token: token)
        let heartRate = UIHeartRateApp(central: central, token: token, options: self.heartRate)
        let echo = UIEchoApp(central: central, token: token, suggestedURL: demoFiles?.url)
        let accel = UIAccelApp(central: central, token: token, devices: app)
        let sample = UISampleApp(central: central, token: token)
        let serve = UIServeApp(central: central, token: token)
        await self.serve(serving) { request in
            if let reply = app.handle(request) { return reply }
            if let reply = heartRate.handle(request) { return reply }
            if let reply = await echo.handle(request) { return reply }
            if let reply = accel.handle(request) { return reply }
            if let reply = sample.handle(request) { return reply }
            if let reply = await serve.handle(request) { return reply }
            if let reply = await peripherals.handle(request) { return reply }
            return .response(.text(.notFound, "no such page\n"))
        }
        app.stop()
        heartRate.stop()
        echo.stop()
        accel.stop()
        sample.stop()
        await serve.stop()
        await peripherals.stop()
        await central.close()
    }

    /// Listens, makes the access policy for the run's `token`, and prints the page's address as
    /// the first line of stdout (and, bound beyond loopback, the warning on stderr).
    func startServing(token: String = makeToken()) throws -> UIServing {
        let listener = try TCPServer<TCPByteConnection>.listen(host: host, port: port)
        let wildcard = HTTPAccessPolicy.isWildcard(host)
        let interfaces = wildcard ? NetworkInterfaces.addresses() : []
        let policy = HTTPAccessPolicy(token: token, allowedHosts: HTTPAccessPolicy.hosts(boundTo: host, port: listener.port,
                                                                                         interfaceAddresses: interfaces, names: allowedNames))
        // Bound to every interface, the address to print is this machine's loopback one (it
        // works here); the others go in the warning.
        let printedHost = wildcard ? (host.contains(":") ? "::1" : "127.0.0.1") : host
        let shownHost = printedHost.contains(":") ? "[\(printedHost)]" : printedHost
        let address = "http://\(shownHost):\(listener.port)/?token=\(token)"
        print("ui: \(address)")
        flushOutput()
        if !HTTPAccessPolicy.isLoopback(host) {
            let others = (interfaces.filter { !HTTPAccessPolicy.isLoopback($0) } + allowedNames).map { HTTPAccessPolicy.authority($0, port: listener.port) }
            standardError("ble ui: warning: listening on \(host.contains(":") ? "[\(host)]" : host):\(listener.port), reachable from the network in cleartext:"
                          + " plain HTTP, so anyone on the network path can read the page and its token and then drive \(broker == nil ? "the radio" : "the gateways")."
                          + (others.isEmpty ? "" : " Reachable as \(others.joined(separator: ", ")).")
                          + " Use it only on a network you trust.")
        }
        return UIServing(listener: listener, token: token, policy: policy, address: address)
    }

    /// Serves `handler` on `serving`'s listener (opening the browser with `--open`) until
    /// Ctrl-C; then stops listening and returns.
    func serve(_ serving: UIServing, handler: @escaping @Sendable (HTTPRequest) async -> UIReply) async {
        let server = UIServer(policy: serving.policy, handler: handler)
        let opener = openBrowser ? Self.open(serving.address, port: serving.listener.port) : nil
        let listener = serving.listener
        let accepting = Task {
            await withDiscardingTaskGroup { group in
                for await connection in listener.connections {
                    group.addTask { await server.serve(UIConnection(connection)) }
                }
            }
        }
        await waitForInterrupt(limit: nil)
        await listener.close()
        accepting.cancel()
        if let opener { try? FileManager.default.removeItem(atPath: opener) }
    }

    /// The demo peripherals for `--hci virtual` (they join the in-process radio when it opens),
    /// the echo server among them serving one picture, so that `/echo`'s fetch works with
    /// nothing attached: `DemoImage` in a directory only this user reads, removed at exit.
    /// Returns that directory and the picture's URL; nil when not virtual, or when the picture
    /// cannot be written (said on stderr; the rest of the demo runs).
    private static func installDemo(virtual: Bool) async -> (directory: String, url: String)? {
        guard virtual else { return nil }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-ui-\(getuid())/echo-\(getpid())").path
        do {
            _ = try PrivateFiles.ensureDirectory(directory)
            try PrivateFiles.write(DemoImage.bitmap(width: 96, height: 64), directory: directory, name: DemoImage.fileName)
            await installDemoPeripheralsInSharedWorld(setup: DemoSetup(echoFiles: try ServedDirectory(directory)))
            return (directory, URL(fileURLWithPath: directory + "/" + DemoImage.fileName).absoluteString)
        } catch {
            standardError("ble: the echo server's demo picture could not be written (\(error)); /echo fetches only what you give it")
            await installDemoPeripheralsInSharedWorld()
            try? FileManager.default.removeItem(atPath: directory)
            return nil
        }
    }

    /// Starts the desktop's browser on `address` through a page that only this user can read
    /// (0600 in a 0700 directory), which sends the browser on: a command line is visible to
    /// every user of the machine (`ps`), and `address` carries the token. Returns the page's
    /// path, removed when `ble ui` stops.
    private static func open(_ address: String, port: UInt16) -> String? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-ui-\(getuid())").path
        let name = "open-\(port).html"
        // The token is hex and the rest an address we printed: nothing to escape.
        let page = "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=\(address)\"><title>ble ui</title><a href=\"\(address)\">open ble ui</a>\n"
        do {
            _ = try PrivateFiles.ensureDirectory(directory)
            try PrivateFiles.write(Array(page.utf8), directory: directory, name: name)
        } catch {
            standardError("ble: could not write the page that opens the browser (\(error)); open \(address)")
            return nil
        }
        let path = directory + "/" + name
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xdg-open", path]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { standardError("ble: could not start a browser (\(error)); open \(address)") }
        return path
    }
}

/// What `ble ui` serves with, in either mode: the listening socket, the run's token, the access
/// policy, and the address printed.
struct UIServing {
    /// The socket listening for browsers.
    let listener: TCPServer<TCPByteConnection>
    /// The run's token.
    let token: String
    /// Who is answered (the token, the Host names).
    let policy: HTTPAccessPolicy
    /// The page's address with the token, as printed.
    let address: String
}

/// A TCP connection as the UI server's byte stream.
struct UIConnection: UIByteStream {
    let connection: TCPByteConnection
    init(_ connection: TCPByteConnection) { self.connection = connection }
    var incoming: AsyncThrowingStream<[UInt8], any Error> { connection.incoming }
    func send(_ bytes: [UInt8]) async throws { try await connection.send(bytes) }
    func close() async { await connection.close() }
    /// The peer's address without the port: "192.0.2.7" of "192.0.2.7:51000", "::1" of "[::1]:51000".
    var peerAddress: String? { Self.address(ofPeer: connection.peer) }

    static func address(ofPeer peer: String) -> String? {
        if peer.hasPrefix("["), let end = peer.firstIndex(of: "]") { return String(peer[peer.index(after: peer.startIndex)..<end]) }
        guard let colon = peer.lastIndex(of: ":") else { return nil }
        return String(peer[..<colon])
    }
}
