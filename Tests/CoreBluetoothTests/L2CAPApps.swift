import CoreBluetooth
import BLETestSupport
import XCTest

/// The service a channel peripheral publishes its PSM in (as apps do: iOS assigns the PSM, so
/// the central reads it before opening the channel).
enum ChannelService {
    static let service = CBUUID(string: "C0C0")
    static let psm = CBUUID(string: "C0C1")
}

/// What both ends of a test channel do with their streams, written as iOS apps write it: both
/// streams get `self` as delegate, are scheduled in the current run loop (the main one: the
/// managers run on the main queue) and opened; bytes are read on `.hasBytesAvailable` and
/// written on `.hasSpaceAvailable` until `write` takes no more.
class ChannelEnd: NSObject, StreamDelegate, @unchecked Sendable {
    private(set) var lines: [String] = []
    private(set) var channel: CBL2CAPChannel?
    /// Everything read, in order.
    private(set) var received = Data()
    /// What is still to be written.
    var outgoing = Data()
    private(set) var written = 0
    /// How many writes took nothing (the peer's credits held the channel back).
    private(set) var refusedWrites = 0
    /// Reads stop while this many bytes wait in `outgoing` (an echo does not buffer without bound).
    var readLimit = Int.max
    /// Read bytes are queued to be written back.
    var echoes = false
    /// Stop reading (a peer that does not read).
    var reads = true
    /// How many stream events came on the main thread, and how many elsewhere.
    private(set) var eventsOnMainThread = 0
    private(set) var eventsOffMainThread = 0
    /// Held while the stream callbacks run, for a test that reads this end from another thread.
    private let lock = NSRecursiveLock()

    /// Runs `body` under the callbacks' lock (for an end whose streams run on another thread).
    func locked<T>(_ body: (ChannelEnd) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(self)
    }

    func record(_ line: String) {
        lock.lock()
        lines.append(line)
        lock.unlock()
        TestEvents.happened()
    }

    /// Where the streams are scheduled: the current run loop when nil.
    var runLoop: SharedValue<RunLoop?> = SharedValue(nil)

    /// Takes a freshly opened channel and starts its streams.
    func adopt(_ channel: CBL2CAPChannel) {
        self.channel = channel
        for stream in [channel.inputStream as Stream, channel.outputStream as Stream] {
            stream.delegate = self
            stream.schedule(in: runLoop.get() ?? .current, forMode: .default)
            stream.open()
        }
    }

    /// Lets go of the channel and its streams without closing them (the channel then closes).
    func dropChannel() { channel = nil }

    /// Closes both streams (and so the channel).
    func closeChannel() {
        channel?.inputStream.close()
        channel?.outputStream.close()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        lock.lock()
        defer { lock.unlock() }
        if Thread.isMainThread { eventsOnMainThread += 1 } else { eventsOffMainThread += 1 }
        let side = aStream === channel?.inputStream ? "input" : "output"
        switch eventCode {
        case .openCompleted: record("\(side) open")
        case .hasBytesAvailable, .hasSpaceAvailable: pump()
        case .endEncountered: record("\(side) end")
        case .errorOccurred: record("\(side) error \(String(describing: aStream.streamError))")
        default: record("\(side) event \(eventCode.rawValue)")
        }
    }

    /// Writes what it can, reads what it may, until neither moves.
    func pump() {
        lock.lock()
        defer { lock.unlock() }
        guard let input = channel?.inputStream, let output = channel?.outputStream else { return }
        var buffer = [UInt8](repeating: 0, count: 1500)
        var moved = true
        while moved {
            moved = false
            if !outgoing.isEmpty, output.streamStatus == .open {
                let n = outgoing.withUnsafeBytes { bytes -> Int in
                    guard let base = bytes.bindMemory(to: UInt8.self).baseAddress else { return 0 }
                    return output.write(base, maxLength: bytes.count)
                }
                if n > 0 {
                    outgoing.removeFirst(n)
                    outgoing = Data(outgoing)
                    written += n
                    moved = true
                } else if n == 0 {
                    refusedWrites += 1
                }
            }
            if reads, outgoing.count < readLimit, input.hasBytesAvailable {
                let n = input.read(&buffer, maxLength: buffer.count)
                if n > 0 {
                    received.append(contentsOf: buffer[0..<n])
                    if echoes { outgoing.append(contentsOf: buffer[0..<n]) }
                    moved = true
                }
            }
        }
    }
}

/// A peripheral app that publishes an L2CAP channel, puts its PSM in a characteristic and
/// advertises; each channel a central opens it takes as its `ChannelEnd`.
final class ChannelPeripheral: ChannelEnd, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    let name: String
    private(set) var psm: CBL2CAPPSM?
    var encrypted = false

    init(name: String, encrypted: Bool = false) {
        self.name = name
        self.encrypted = encrypted
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        record("state \(peripheral.state)")
        if peripheral.state == .poweredOn { peripheral.publishL2CAPChannel(withEncryption: encrypted) }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        guard error == nil else { return record("publish error \(String(describing: error))") }
        record("published \(PSM)")
        psm = PSM
        let characteristic = CBMutableCharacteristic(type: ChannelService.psm, properties: [.read],
                                                     value: Data([UInt8(PSM & 0xFF), UInt8(PSM >> 8)]), permissions: [.readable])
        let service = CBMutableService(type: ChannelService.service, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [ChannelService.service]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        record(error == nil ? "advertising" : "advertising error")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        record(error == nil ? "unpublished \(PSM)" : "unpublish error \(PSM)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        guard let channel else { return record("open error") }
        record("channel \(channel.psm) from \(channel.peer is CBCentral ? "a central" : "?")")
        adopt(channel)
    }
}

/// A central app that finds a `ChannelPeripheral` by name, reads its PSM, and opens a channel
/// to it (or to `psmOverride`).
final class ChannelCentral: ChannelEnd, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var central: CBCentralManager!
    let name: String
    private(set) var peripheral: CBPeripheral?
    var psmOverride: CBL2CAPPSM?
    private(set) var openError: (any Error)?

    init(name: String) {
        self.name = name
        super.init()
        central = CBCentralManager(delegate: self, queue: nil, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [ChannelService.service]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil, peripheral.name == name else { return }
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        record("connected")
        peripheral.discoverServices([ChannelService.service])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        record("disconnected")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first else { return record("no service") }
        peripheral.discoverCharacteristics([ChannelService.psm], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return record("no characteristic") }
        peripheral.readValue(for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value, value.count == 2 else { return record("no PSM") }
        let psm = psmOverride ?? (CBL2CAPPSM(value[0]) | CBL2CAPPSM(value[1]) << 8)
        record("opening \(psm)")
        peripheral.openL2CAPChannel(psm)
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        guard let channel else {
            openError = error
            return record("open error")
        }
        record("channel \(channel.psm) to \(channel.peer === peripheral ? "the peripheral" : "?")")
        adopt(channel)
    }
}

extension ChannelEnd {
    /// 64 KB in which every byte value occurs, in no short repeating pattern.
    static let payload = Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
}
