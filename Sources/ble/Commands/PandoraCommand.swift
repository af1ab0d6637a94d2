import BLE
import BLESystems
import BLETransport
import Foundation

/// `ble pandora`: our stack as a Pandora device under test (DUT), for Google's Avatar suite
/// and any other Pandora-based test: Pandora's gRPC services (pandora.Host, pandora.Security,
/// pandora.SecurityStorage, pandora.l2cap.L2CAP) on `--port`, served by a Python bridge
/// (grpcio and the bt-test-interfaces stubs) that this command starts and that drives the
/// stack through the control protocol of docs/PANDORA.md.
struct PandoraCommand: BLECommand {
    static let name = "pandora"
    static let abstract = "Serve Pandora's gRPC test interfaces for the stack (a DUT for Google's Avatar)."
    static let options: [CommandOption] = [
        .single("port", value: "N", help: "the gRPC port on 127.0.0.1 (default 8999)"),
        .single("python", value: "PATH", help: "the Python with grpcio and bt-test-interfaces (default: $BLE_PANDORA_PYTHON, else python3)"),
        .single("bridge", value: "PATH", help: "the bridge script (default: pandora_bridge.py, installed with ble)"),
        .single("io", value: "CAP", help: "the DUT's IO capability: none, display, yesno, keyboard, keyboard-display (default)"),
    ]
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio, .handlesInterrupts]
    static let discussion = """
    Serves until interrupted. The bridge (pandora_bridge.py, installed with ble) needs a Python
    with `pip install grpcio bt-test-interfaces==0.0.6`; scripts/avatar.sh makes one and runs
    Avatar's LE cases against this command. FactoryReset closes the host and opens a new one on
    the same controller: bonds (kept in memory), the random address, caches and the controller's
    state go with it. docs/PANDORA.md lists the calls served and how each maps to the stack.
    """

    var hci: String?
    var port: UInt16
    var python: String
    var bridge: String?
    var io: SMPIOCapability

    init(_ args: ParsedArguments) throws {
        hci = try ControllerOptions(args).hci
        port = try args.int("port").map { p throws -> UInt16 in
            guard let port = UInt16(exactly: p), port > 0 else { throw UsageError("--port must be 1...65535") }
            return port
        } ?? 8999
        python = args.option("python") ?? ProcessInfo.processInfo.environment["BLE_PANDORA_PYTHON"] ?? "python3"
        bridge = args.option("bridge")
        io = try args.option("io").map(SecurityOptions.ioCapability) ?? .keyboardDisplay
    }

    func run() async throws {
        let stack = PandoraStack(spec: hci, ioCapability: io)
        try await stack.open()
        let control = try TCPServer<TCPByteConnection>.listen(host: "127.0.0.1", port: 0)
        let token = (0..<16).map { _ in UInt8.random(in: 0...255) }.hexString
        let bridge: PandoraBridgeProcess
        do {
            bridge = try PandoraBridgeProcess.start(python: python, script: self.bridge ?? PandoraBridgeProcess.installedScript(),
                                                    grpcPort: port, controlPort: control.port, token: token)
        } catch {
            await control.close()
            await stack.close()
            throw error
        }
        let outcome: Result<Void, Error> = await withTaskGroup(of: Result<Void, Error>?.self) { group in
            group.addTask {
                // The first connection that proves it is our bridge is served; others are closed.
                for await connection in control.connections {
                    let server = PandoraServer(stack: stack, connection: connection, token: token) {
                        print("ble pandora: serving Pandora on 127.0.0.1:\(port) for \(hci ?? "$BLE_HCI")")
                        flushOutput()
                    }
                    guard await server.serve() else { continue }
                    return .failure(BLEError.transport("the Pandora bridge closed its control connection"))
                }
                return nil
            }
            group.addTask {
                let status = await bridge.exitStatus()
                return .failure(BLEError.transport("the Pandora bridge exited with status \(status)"))
            }
            group.addTask { await waitForInterrupt(limit: nil) ? .success(()) : nil }
            var first: Result<Void, Error>?
            while first == nil, let next = await group.next() { first = next }
            group.cancelAll()
            return first ?? .success(())
        }
        bridge.terminate()
        await control.close()
        await stack.shutdown()
        if case let .failure(error) = outcome { throw error }
    }
}
