import BLE
import BLEProfiles
import BLEWire

/// `ble serve echo`: the Raspberry Pi side of docs/SYSTEMS.md S1. One service, one characteristic that
/// centrals write (with response) and that we notify on; both directions carry the framed stream.
///
/// Every connected central has its own stream: its writes go through its own incremental
/// `FrameDecoder` and its frames are answered in order by its own task (`EchoConnection`), so
/// several centrals are served at once and a slow fetch for one delays nobody else. Replies go to
/// that central only.
public struct EchoServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "echo"
    /// The line `ble serve --help` shows.
    public static let summary = "S1 framed stream: T frames echoed (\"You said: …\"), U frames fetched (http, https; file only with --files DIR) and sent back as I frames"

    /// The largest frame body taken from a central, and the largest resource sent back.
    public static let defaultMaximumBodySize = 4 * 1024 * 1024

    /// This server's limit (`defaultMaximumBodySize`; tests lower it to refuse small frames).
    public var maximumBodySize = EchoServeProfile.defaultMaximumBodySize

    /// The directory file:// URLs may read from (`--files DIR`); nil refuses them all, since
    /// any central in range may ask.
    public var files: ServedDirectory?
    var streamHandle: UInt16?
    /// Subscribed at install time, before advertising, so no write can come before we listen.
    var events: PeripheralManagerEventStream?

    /// The profile with `ble serve`'s defaults: no files served.
    public init() {}

    /// A server that serves the regular files under `files` (the demo's image directory).
    public init(files: ServedDirectory?) {
        self.files = files
    }

    /// `--files DIR`: resolved once, now, so a directory that cannot be served stops the server
    /// before it starts.
    public mutating func configure(_ options: ServeProfileOptions) throws {
        if let directory = options.files {
            do {
                files = try ServedDirectory(directory)
            } catch {
                throw ServeOptionError("--files: \(error)")
            }
        }
    }

    /// Adds the service and subscribes to the manager's events before advertising starts.
    public mutating func install(on manager: PeripheralManager) async throws {
        // A dynamic value (nil): every write comes to us as a `.write` event, in order.
        let handles = try await manager.add(GATTServiceDefinition(uuid: EchoProfile.service, characteristics: [
            GATTCharacteristicDefinition(uuid: EchoProfile.stream, properties: [.write, .notify], permissions: [.write], value: nil),
        ]))
        streamHandle = handles.valueHandle(for: EchoProfile.stream)
        events = await manager.events
    }

    /// The 128-bit service UUID and as much of the name as fits; the whole name in the scan response.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([EchoProfile.service]).localName(name).build()
        let response = AdvertisingData.Builder().localName(name).build()
        return (data.shorteningLocalName(toFit: AdvertisingData.legacyLimit), response.shorteningLocalName(toFit: AdvertisingData.legacyLimit))
    }

    /// Serves every central until cancelled: one decoder and one answering task per central.
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = streamHandle, let events else { return }
        let fetcher = ResourceFetcher(maximumSize: maximumBodySize, files: files)
        let limit = maximumBodySize
        await withDiscardingTaskGroup { group in
            var connections: [UInt64: EchoConnection] = [:]
            func connection(_ central: ConnectedCentral) -> EchoConnection {
                if let existing = connections[central.id] { return existing }
                let (work, continuation) = AsyncStream<EchoWork>.makeStream()
                let made = EchoConnection(central: central, work: continuation, maximumBodySize: limit)
                connections[central.id] = made
                group.addTask {
                    await EchoConnection.answer(work, for: central, handle: handle, manager: manager, fetcher: fetcher, log: log)
                }
                return made
            }
            for await event in events {
                switch event {
                case let .connected(central):
                    _ = connection(central)
                case let .mtuChanged(central, mtu):
                    connection(central).mtu = mtu
                case let .write(request) where request.handle == handle:
                    // The bytes are ours as soon as they arrive; the answer comes as notifications.
                    if request.kind != .command { await manager.respond(to: request, with: .success(())) }
                    connection(request.central).receive(request.value)
                case let .disconnected(central, _):
                    connections.removeValue(forKey: central.id)?.close()
                default:
                    break
                }
            }
            for c in connections.values { c.close() }
        }
    }
}
