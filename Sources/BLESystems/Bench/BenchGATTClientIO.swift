import BLE

/// bumble-bench's `gatt-client` mode: packets go out as Write Commands to TX and come back as
/// notifications of RX, on a peer that serves the speed service.
public final class BenchGATTClientIO: BenchPacketIO {
    /// The connected peer.
    public let peripheral: Peripheral
    /// The peer's TX and RX characteristics.
    public let tx: GATTCharacteristic
    public let rx: GATTCharacteristic
    private let notifications: SingleReader<NotificationStream.Iterator>

    /// Finds the speed service and its characteristics on `peripheral` and subscribes to RX.
    /// The MTU is exchanged first, asking for `mtu` (bumble-bench's `--att-mtu`).
    public static func connect(_ peripheral: Peripheral, mtu: Int, log: @Sendable (String) -> Void) async throws -> BenchGATTClientIO {
        log("*** Requesting MTU update: \(mtu)")
        do {
            _ = try await peripheral.exchangeMTU(mtu)
        } catch let error as BLEError {
            // A peer that refuses the exchange (or has done it already) leaves the MTU as it is;
            // packets that do not fit are refused before the run starts.
            log("!!! MTU update refused: \(error); the MTU stays \(peripheral.mtu)")
        }
        log("*** Discovering services...")
        guard let service = try await peripheral.discoverServices([BenchProfile.service]).first(where: { $0.uuid == BenchProfile.service }) else {
            throw BenchError.missingAttribute("Speed Service (\(BenchProfile.service))")
        }
        log("*** Discovering characteristics...")
        let characteristics = try await peripheral.discoverCharacteristics([BenchProfile.tx, BenchProfile.rx], for: service)
        guard let tx = characteristics.first(where: { $0.uuid == BenchProfile.tx }) else {
            throw BenchError.missingAttribute("Speed TX characteristic (\(BenchProfile.tx))")
        }
        guard let rx = characteristics.first(where: { $0.uuid == BenchProfile.rx }) else {
            throw BenchError.missingAttribute("Speed RX characteristic (\(BenchProfile.rx))")
        }
        // The stream exists before the subscription, so no notification is missed.
        let stream = await peripheral.notifications(for: rx)
        log("*** Subscribing to RX")
        try await peripheral.setNotifyValue(true, for: rx)
        log("*** Discovery complete")
        return BenchGATTClientIO(peripheral: peripheral, tx: tx, rx: rx, notifications: stream)
    }

    private init(peripheral: Peripheral, tx: GATTCharacteristic, rx: GATTCharacteristic, notifications: NotificationStream) {
        self.peripheral = peripheral
        self.tx = tx
        self.rx = rx
        self.notifications = SingleReader(notifications)
    }

    public var overhead: Int { 0 }

    public func maximumPacketLength() async -> Int { peripheral.maximumWriteValueLength(for: .withoutResponse) }

    public func waitUntilReady() async throws {}

    public func send(_ packet: [UInt8]) async throws {
        try await peripheral.writeValue(packet, for: tx, type: .withoutResponse)
    }

    public func receive() async throws -> [UInt8]? {
        await notifications.next()
    }
}

/// An async sequence (an `AsyncStream`, a `NotificationStream`) read through one iterator by
/// one task at a time (what `BenchPacketIO` promises its callers), so the iterator can live in a
/// class the IO shares.
final class SingleReader<Iterator: AsyncIteratorProtocol>: @unchecked Sendable where Iterator.Failure == Never {
    private var iterator: Iterator

    init<Sequence: AsyncSequence>(_ sequence: Sequence) where Sequence.AsyncIterator == Iterator {
        iterator = sequence.makeAsyncIterator()
    }

    /// The next element; nil once the sequence has finished.
    func next() async -> Iterator.Element? {
        await iterator.next(isolation: nil)
    }
}
