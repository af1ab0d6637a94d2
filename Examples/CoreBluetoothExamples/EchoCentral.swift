import CoreBluetooth

/// S1's phone client: sends one text (a `T` frame, or `U` when it starts with `http`) to the echo
/// server over the framed stream and shows what comes back (text, or an image saved to a file).
public final class EchoCentral: ExampleApp, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let serviceUUID = CBUUID(string: "54f06857-695e-47e4-aea8-c78184ad6c75")
    static let streamUUID = CBUUID(string: "30a5f1bb-61dc-45f0-9c52-2218d080fa77")

    let message: String
    let imagePath: String
    var central: CBCentralManager!
    var echoServer: CBPeripheral?
    var stream: CBCharacteristic?
    var decoder = FrameDecoder(limit: 16 << 20)
    var connected = false

    /// An app that will send `message`; an image reply is written to `imagePath`.
    public init(message: String, imagePath: String = "echo-image.bin", queue: DispatchQueue? = nil) {
        self.message = message
        self.imagePath = imagePath
        super.init(queue: queue)
    }

    /// Creates the manager; the rest happens in the callbacks.
    public func start() {
        central = CBCentralManager(delegate: self, queue: queue)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        show("state: \(Self.name(of: central.state))")
        guard central.state == .poweredOn else { return }
        show("scanning for \(Self.serviceUUID)")
        central.scanForPeripherals(withServices: [Self.serviceUUID], options: nil)
        after(10) { [self] in
            guard echoServer == nil else { return }
            central.stopScan()
            show("not found")
            done(1)
        }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard echoServer == nil else { return }
        show("discovered \(peripheral.name ?? "unnamed") (\(peripheral.identifier))")
        central.stopScan()
        echoServer = peripheral
        peripheral.delegate = self
        central.connect(peripheral, options: nil)
        after(10) { [self] in
            guard !connected else { return }
            central.cancelPeripheralConnection(peripheral)
            show("connecting gave up after 10 s")
            done(1)
        }
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connected = true
        show("connected")
        peripheral.discoverServices([Self.serviceUUID])
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        show("error: \(error?.localizedDescription ?? "connection failed")")
        done(1)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        show(error.map { "disconnected: \($0.localizedDescription)" } ?? "closed")
        done(error == nil ? 0 : 1)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.serviceUUID }) else {
            show("error: no echo service (\(error?.localizedDescription ?? "not found"))")
            return done(1)
        }
        peripheral.discoverCharacteristics([Self.streamUUID], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first(where: { $0.uuid == Self.streamUUID }) else {
            show("error: no stream characteristic")
            return done(1)
        }
        stream = characteristic
        peripheral.setNotifyValue(true, for: characteristic)
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            show("error: \(error.localizedDescription)")
            return done(1)
        }
        let chunk = peripheral.maximumWriteValueLength(for: .withoutResponse)
        show("notifications on; max write length \(chunk)")
        let code: Character = message.hasPrefix("http") ? "U" : "T"
        let frame = FrameDecoder.frame(code: code, body: Data(message.utf8))
        show("sending \(code) frame of \(frame.count) bytes")
        var offset = 0
        while offset < frame.count {
            let end = min(offset + chunk, frame.count)
            peripheral.writeValue(frame.subdata(in: offset..<end), for: characteristic, type: .withResponse)
            offset = end
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error { show("write error: \(error.localizedDescription)") }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value else { return }
        do {
            for frame in try decoder.feed(value) {
                switch frame.code {
                case "T": show("received text: \(String(data: frame.body, encoding: .utf8) ?? "(not UTF-8)")")
                case "I":
                    try frame.body.write(to: URL(fileURLWithPath: imagePath))
                    show("received image: \(frame.body.count) bytes, saved to \(imagePath)")
                default: show("received \(frame.code) frame of \(frame.body.count) bytes")
                }
                if frame.code != "N" { central.cancelPeripheralConnection(peripheral) }
            }
        } catch {
            show("error: \(error)")
            central.cancelPeripheralConnection(peripheral)
        }
    }
}

/// S1's frames: CODE (1 ASCII byte) + SIZE (7 ASCII digits) + BODY, reassembled in linear time
/// from writes and notifications cut anywhere.
public struct FrameDecoder {
    /// A frame's header was not `CODE` + 7 digits, or announced more than the limit.
    public struct Malformed: Error, CustomStringConvertible {
        /// What was wrong.
        public let description: String
    }

    let limit: Int
    var buffer: [UInt8] = []
    var start = 0

    /// A decoder refusing bodies over `limit` bytes.
    public init(limit: Int) { self.limit = limit }

    /// The bytes of one frame.
    public static func frame(code: Character, body: Data) -> Data {
        Data(String(code).utf8) + Data(String(format: "%07d", body.count).utf8) + body
    }

    /// Adds bytes; returns the frames they complete.
    public mutating func feed(_ data: Data) throws -> [(code: Character, body: Data)] {
        buffer.append(contentsOf: data)
        var frames: [(code: Character, body: Data)] = []
        while buffer.count - start >= 8 {
            let header = buffer[(start + 1)..<(start + 8)]
            guard header.allSatisfy({ (0x30...0x39).contains($0) }), let size = Int(String(decoding: header, as: UTF8.self)) else {
                throw Malformed(description: "malformed frame header \(Array(buffer[start..<(start + 8)]))")
            }
            guard size <= limit else { throw Malformed(description: "frame of \(size) bytes is over the \(limit)-byte limit") }
            guard buffer.count - start >= 8 + size else { break }
            let code = Character(UnicodeScalar(buffer[start]))
            frames.append((code, Data(buffer[(start + 8)..<(start + 8 + size)])))
            start += 8 + size
        }
        if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return frames
    }
}
