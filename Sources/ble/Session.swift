import BLE
import BLESystems
import BLEVirtual
import BLEWire

/// What every command that talks to a controller shares: which controller, the capture file.
struct ControllerOptions {
    /// Whether a controller spec is the in-process virtual radio (`virtual` or `virtual:PROFILE`).
    static func namesVirtualRadio(_ spec: String?) -> Bool {
        spec == "virtual" || spec?.hasPrefix("virtual:") == true
    }

    var hci: String?
    var capture: String?
    /// Where attribute caches are kept (`--gatt-cache`, `BLE_GATT_CACHE`, default
    /// `$XDG_CACHE_HOME/ble/gatt`); nil keeps them in memory for the process.
    var gattCacheDirectory: String?
    var mtu: Int
    var security: SecurityOptions
    /// `--phy`: the PHYs scans and connections listen on for advertisements.
    var listeningPHYs: LEPHYSet = .le1M

    /// `attMTU` false: the command's `--mtu` is not the ATT MTU (`ble l2cap`'s is the channel's).
    /// `listening`: the command takes `--phy` (`CommandNeeds.listening`).
    init(_ args: ParsedArguments, attMTU: Bool = true, listening: Bool = false, environment: [String: String] = currentEnvironment()) throws {
        hci = args.option("hci")
        capture = args.option("capture")
        security = try SecurityOptions(args, environment: environment)
        // The in-process radio's demo peripherals forget their bonds when the process ends, so
        // a bond stored with one would only make the next run's encryption fail (the peer has
        // no key). Unless `--bonds` names a directory on this command line, the virtual radio's
        // bonds and our identity on it last as long as the process.
        if Self.namesVirtualRadio(hci ?? environment["BLE_HCI"]), args.option("bonds") == nil {
            security.bondsDirectory = nil
            security.bondsNamed = false
        }
        // Like bonds: the virtual radio's demo peripherals live as long as the process, so their
        // caches do too unless a directory is named on the command line.
        if Self.namesVirtualRadio(hci ?? environment["BLE_HCI"]) {
            gattCacheDirectory = args.option("gatt-cache")
        } else {
            gattCacheDirectory = args.option("gatt-cache") ?? environment["BLE_GATT_CACHE"].flatMap { $0.isEmpty ? nil : $0 }
                ?? DirectoryGATTCacheStore.defaultDirectory(environment: environment)
        }
        mtu = try attMTU ? (args.int("mtu") ?? 517) : 517
        guard (23...517).contains(mtu) else { throw UsageError("--mtu must be between 23 and 517") }
        if args.flag("verbose") { HostDiagnostics.verbose = true }
        if listening, let text = args.option("phy") { listeningPHYs = try Self.phys(text) }
    }

    /// `--phy`: a comma list of `1m` and `coded`.
    static func phys(_ text: String) throws -> LEPHYSet {
        var phys = LEPHYSet()
        for part in text.lowercased().split(separator: ",", omittingEmptySubsequences: false) {
            switch part {
            case "1m": phys.insert(.le1M)
            case "coded": phys.insert(.leCoded)
            default: throw UsageError("--phy takes 1m, coded or 1m,coded, not '\(text)'")
            }
        }
        return phys
    }

    /// Opens a central with the bond store and pairing settings. It uses the stored identity
    /// address when `pairing`, when `target` is a bonded device, or, without a target, when any
    /// device is bonded (so the peer knows us), unless `--public`.
    func openCentral(target: AddressArgument? = nil, pairing: Bool = false) async throws -> Central {
        let store = try security.bondStore()
        var configuration = HostConfiguration()
        configuration.listeningPHYs = listeningPHYs
        configuration.security = security.settings(store: store)
        configuration.gattCache = try gattCacheStore()
        let bonds = (try? store.bonds()) ?? []
        // A named target that is bonded; or, for the flows that pick a device from a scan (the
        // seed systems' centrals), any bond at all, since the device they pick may be one.
        let bonded = target.map { t in bonds.contains { $0.peer.address == t.address || $0.connectionAddress?.address == t.address } } ?? !bonds.isEmpty
        let address = try security.ownAddress(store: store, identity: pairing || bonded)
        // A controller without a public address gets the local identity's static random one
        // (HostController+OwnAddress.swift).
        return try await Central.open(transport: Controllers.open(spec: hci, capture: capture), address: address, configuration: configuration)
    }
}

extension ControllerOptions {
    /// The attribute cache store: files in `gattCacheDirectory` (bonded peers' entries also
    /// beside their bonds), else memory for this process.
    func gattCacheStore() throws -> any GATTCacheStore {
        guard let gattCacheDirectory else { return InMemoryGATTCacheStore() }
        return try DirectoryGATTCacheStore(directory: gattCacheDirectory, bondsDirectory: security.bondsDirectory)
    }
}

extension CommandPositional {
    /// The peer to connect to, as `AddressArgument` reads it.
    static let address = CommandPositional.required("ADDRESS", help: "XX:XX:XX:XX:XX:XX, optionally /public or /random (else a scan learns the type)")
    /// The characteristic to use, as `CharacteristicArgument` reads it.
    static let characteristic = CommandPositional.required("CHARACTERISTIC", help: "a UUID (2A37, 128-bit) or a handle (0x0010)")
}

extension AddressArgument {
    /// `XX:XX:XX:XX:XX:XX`, optionally `/public` or `/random`, as typed on the command line.
    /// Without the suffix the type is learned by scanning (`resolve`).
    init(_ text: String) throws {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, let a = BDAddress(string: first) else {
            throw UsageError("'\(text)' is not an address: expected XX:XX:XX:XX:XX:XX[/public|/random]")
        }
        var type: AddressType?
        if parts.count == 2 {
            switch parts[1].lowercased() {
            case "public": type = .public
            case "random": type = .random
            default: throw UsageError("address type must be /public or /random, not /\(parts[1])")
            }
        }
        self.init(address: a, type: type)
    }
}

/// A characteristic named by UUID (16-bit or 128-bit) or by value handle (`0x0010`).
enum CharacteristicArgument {
    case uuid(BluetoothUUID)
    case handle(UInt16)

    init(_ text: String) throws {
        if text.lowercased().hasPrefix("0x"), text.count <= 6, let h = UInt16(text.dropFirst(2), radix: 16) {
            self = .handle(h)
        } else if let u = BluetoothUUID(string: text) {
            self = .uuid(u)
        } else if let h = UInt16(text) {
            self = .handle(h)
        } else {
            throw UsageError("'\(text)' is neither a UUID (180D, 0000180d-…) nor a handle (0x0010)")
        }
    }

    /// Finds the characteristic on the peer; a handle may name a value or declaration handle.
    func locate(on peripheral: Peripheral) async throws -> GATTCharacteristic {
        // By type: the first declaration of it, from the attribute cache or a search of just
        // what the cache lacks (Vol 3 Part G §2.5.2), without discovering services first.
        if case let .uuid(u) = self {
            guard let c = try await peripheral.characteristic(u) else {
                throw BLEError.invalidArgument("no characteristic \(self) on \(peripheral.address)")
            }
            return c
        }
        let services = try await peripheral.discoverServices()
        for service in services {
            if case let .handle(h) = self, !(service.startHandle...service.endHandle).contains(h) { continue }
            for c in try await peripheral.discoverCharacteristics(for: service) {
                switch self {
                case let .uuid(u) where c.uuid == u: return c
                case let .handle(h) where c.valueHandle == h || c.declarationHandle == h: return c
                default: continue
                }
            }
        }
        throw BLEError.invalidArgument("no characteristic \(self) on \(peripheral.address)")
    }
}

extension CharacteristicArgument: CustomStringConvertible {
    var description: String {
        switch self {
        case let .uuid(u): return u.description
        case let .handle(h): return "0x" + String(format4: h)
        }
    }
}

/// Connects to an address argument, learning its type by scanning if needed, and exchanges the
/// ATT MTU (a peer that refuses the exchange keeps the default 23). Unless `waitForMTU`, the
/// exchange is only started: the caller's first request queues behind it on the bearer.
func connect(_ target: AddressArgument, central: Central, mtu: Int, timeout: Duration = .seconds(10),
             waitForMTU: Bool = true) async throws -> Peripheral {
    let address = try await target.resolve(using: central)
    let peripheral = try await central.connect(address, timeout: timeout)
    if waitForMTU {
        try await exchangeMTU(mtu, on: peripheral)
    } else if mtu > 23 {
        await peripheral.startMTUExchange(mtu)
    }
    return peripheral
}
