import BLE
import BLESystems

/// `ble gatt ADDRESS`: the peer's whole GATT database as a tree, and whether the peer offers
/// Enhanced ATT (its Server Supported Features, Core spec Vol 3 Part G §7.4).
struct GattCommand: BLECommand {
    static let name = "gatt"
    static let abstract = "Connect and print the whole GATT database: services, characteristics, descriptors, values."
    static let positionals: [CommandPositional] = [.address]
    static let options: [CommandOption] = [
        mtuOption,
        .flag("json", help: "print the database as one JSON object"),
        .flag("no-values", help: "do not read values"),
        .single("timeout", value: "S", help: "connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var json: Bool
    var readValues: Bool
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        target = try AddressArgument(args.positionals[0])
        json = args.flag("json")
        readValues = !args.flag("no-values")
        timeout = try args.seconds("timeout") ?? .seconds(10)
    }

    /// `EATT: offered (Server Supported Features 0x01)`, `EATT: not offered`, or unknown when
    /// the characteristic's value was not read. On an encrypted link, `bearers` says how many
    /// Enhanced ATT bearers our client opened (Vol 3 Part G §5.3.1: only encrypted links have
    /// them): `EATT: offered (…), 2 bearers open`.
    static func eattLine(_ db: GATTDatabaseSnapshot, bearers: Int? = nil) -> String {
        switch db.offersEATT {
        case true?:
            let hex = (db.serverSupportedFeatures ?? []).map { String($0, radix: 16, uppercase: true) }.map { $0.count == 1 ? "0" + $0 : $0 }
            let open = bearers.map { ", \($0) bearer\($0 == 1 ? "" : "s") open" } ?? ""
            return "EATT: offered (Server Supported Features 0x\(hex.joined()))" + open
        case false?:
            return db.serverSupportedFeatures == nil ? "EATT: not offered (no Server Supported Features)" : "EATT: not offered"
        case nil:
            return "EATT: unknown (Server Supported Features not read)"
        }
    }

    func run() async throws {
        let central = try await controller.openCentral(target: target)
        do {
            let peripheral = try await connect(target, central: central, mtu: controller.mtu, timeout: timeout)
            let db = try await peripheral.discoverDatabase(readValues: readValues)
            if json {
                print(GATTDatabaseDump.json(db, address: peripheral.address).text)
            } else {
                print(GATTDatabaseDump.tree(db, address: peripheral.address))
                let encrypted = await peripheral.securityLevel >= .encrypted
                let bearers = encrypted ? await peripheral.enhancedATTBearersSettled() : nil
                print(Self.eattLine(db, bearers: bearers))
                if db.fromCache { print("Layout from the GATT cache (Database Hash unchanged): no discovery requests") }
            }
            try? await peripheral.disconnect()
        } catch {
            await central.close()
            throw error
        }
        await central.close()
    }
}
