import BLE
import BLESystems

/// `ble bonds [list]` and `ble bonds remove ADDRESS`: the bond store, without a controller.
struct BondsCommand: BLECommand {
    static let name = "bonds"
    static let abstract = "List the stored bonds, or remove one."
    static let discussion = """
        ble bonds [list]          every bond: identity address, security level, pairing kind, key size, keys
        ble bonds remove ADDRESS  forget the bond with ADDRESS (its identity address); the next
                                  connection to it pairs from scratch

        Files that are not bonds are reported on stderr and skipped.
        """
    static let positionals: [CommandPositional] = [
        .optional("ACTION", help: "list (default) or remove"),
        .optional("ADDRESS", help: "for remove: XX:XX:XX:XX:XX:XX[/public|/random]"),
    ]
    static let options: [CommandOption] = [.flag("json", help: "one JSON object per bond")] + bondOptions.filter { $0.name == "bonds" }
    static let needs: CommandNeeds = []

    enum Action { case list, remove(AddressArgument) }

    var action: Action
    var json: Bool
    var security: SecurityOptions

    init(_ args: ParsedArguments) throws {
        security = try SecurityOptions(args)
        json = args.flag("json")
        switch args.positionals.first {
        case nil, "list"?:
            guard args.positionals.count <= 1 else { throw UsageError("list takes no ADDRESS") }
            action = .list
        case "remove"?:
            guard args.positionals.count == 2 else { throw UsageError("remove needs the ADDRESS of the bond") }
            action = .remove(try AddressArgument(args.positionals[1]))
        case let other?:
            throw UsageError("unknown action '\(other)': list or remove")
        }
    }

    func run() async throws {
        let store = try security.bondStore()
        switch action {
        case .list:
            let bonds = try store.bonds()
            for problem in store.problems() { standardError("ble: \(problem)") }
            if json {
                for b in bonds { print(BondListing.json(b).text) }
            } else if bonds.isEmpty {
                print("no bonds in \(security.bondsDirectory ?? "memory")")
            } else {
                for b in bonds { print(BondListing.line(b)) }
            }
        case let .remove(target):
            let bonds = try store.bonds()
            let matching = bonds.filter { $0.peer.address == target.address && (target.type == nil || $0.peer.type.peerType == target.type) }
            guard !matching.isEmpty else { throw BLEError.invalidArgument("no bond with \(target.address) in \(security.bondsDirectory ?? "memory")") }
            for b in matching {
                try store.remove(b.peer)
                print("removed: \(b.peer)")
            }
        }
    }
}
