import BLE
import BLESystems

/// `ble pair ADDRESS`: pairs with a peripheral and prints the outcome.
struct PairCommand: BLECommand {
    static let name = "pair"
    static let abstract = "Pair with a peripheral (LE Secure Connections or legacy) and store the bond."
    static let discussion = """
        Connects, pairs with the association model the two IO capabilities choose (Core spec Vol 3
        Part H §2.3.5.1), and prints the outcome: Secure Connections or legacy, the method, the
        security level, the key size, the keys distributed each way, and whether the bond was
        stored. Exit status 0 only when paired.

        Connects with this host's identity address (a static random address kept in the bond
        store) so the peer knows us on the next run, on any controller; --public uses the
        controller's own address instead.
        """
    static let positionals: [CommandPositional] = [.address]
    static let options: [CommandOption] = [
        .flag("json", help: "print one object: {\"paired\",\"secureConnections\",\"method\",\"keySize\",\"bonded\",...}"),
        .single("timeout", value: "S", help: "connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var json: Bool
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        target = try AddressArgument(args.positionals[0])
        json = args.flag("json")
        timeout = try args.seconds("timeout") ?? .seconds(10)
    }

    func run() async throws {
        let central = try await controller.openCentral(target: target, pairing: true)
        var peer: DeviceAddress?
        do {
            let address = try await target.resolve(using: central)
            peer = address
            let peripheral = try await central.connect(address, timeout: timeout)
            let result: PairingResult
            do {
                result = try await peripheral.pair()
            } catch {
                try? await peripheral.disconnect()
                throw error
            }
            if json {
                print(PairingReport.json(result, peer: address).text)
            } else {
                for line in PairingReport.lines(result, peer: address, bondsDirectory: controller.security.bondsDirectory) { print(line) }
            }
            await peripheral.flush()
            try? await peripheral.disconnect()
        } catch {
            await central.close()
            if json, !(error is CancellationError) {
                print(PairingReport.json(failure: error, peer: peer).text)
            }
            throw error
        }
        await central.close()
    }
}
