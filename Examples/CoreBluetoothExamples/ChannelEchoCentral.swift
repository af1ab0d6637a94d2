import CoreBluetooth

/// An L2CAP echo client in CoreBluetooth style: finds a peripheral by its advertised name,
/// opens an L2CAP channel to it on a PSM, writes a payload through the channel's output stream
/// as space comes, reads the echo from its input stream, and checks it byte for byte; then
/// closes the streams and disconnects.
public final class ChannelEchoCentral: ExampleApp, CBCentralManagerDelegate, CBPeripheralDelegate, StreamDelegate, @unchecked Sendable {
    let name: String
    let psm: CBL2CAPPSM
    let payload: Data
    var central: CBCentralManager!
    var target: CBPeripheral?
    var channel: CBL2CAPChannel?
    var sent = 0
    var received = Data()
    var opened = Date()
    var status: Int32 = 1

    /// An app that will send `count` bytes of `pattern(_:)` to the peripheral named `name` on `psm`.
    public init(name: String, psm: CBL2CAPPSM, count: Int, queue: DispatchQueue? = nil) {
        self.name = name
        self.psm = psm
        self.payload = Self.pattern(count)
        super.init(queue: queue)
    }

    /// The bytes sent: byte i is (13 i + i / 256) mod 256, so every value occurs and no short
    /// stretch repeats.
    public static func pattern(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) })
    }

    /// Creates the manager; the rest happens in the callbacks.
    public func start() {
        central = CBCentralManager(delegate: self, queue: queue)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        show("state: \(Self.name(of: central.state))")
        guard central.state == .poweredOn else { return }
        show("scanning for \(name)")
        central.scanForPeripherals(withServices: nil, options: nil)
        after(15) { [self] in
            guard target == nil else { return }
            central.stopScan()
            show("not found")
            done(1)
        }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard target == nil, peripheral.name == name else { return }
        show("discovered \(name) (\(peripheral.identifier))")
        central.stopScan()
        target = peripheral
        peripheral.delegate = self
        central.connect(peripheral, options: nil)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        show("connected")
        show("opening an L2CAP channel on PSM 0x" + String(psm, radix: 16, uppercase: true))
        peripheral.openL2CAPChannel(psm)
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        show("error: \(error?.localizedDescription ?? "connection failed")")
        done(1)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        show(error.map { "disconnected: \($0.localizedDescription)" } ?? "disconnected")
        done(status)
    }

    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        guard let channel else {
            show("error: no channel (\(error?.localizedDescription ?? "unknown"))")
            central.cancelPeripheralConnection(peripheral)
            return
        }
        show("channel open on PSM \(channel.psm)")
        self.channel = channel
        opened = Date()
        for stream in [channel.inputStream as Stream, channel.outputStream as Stream] {
            stream.delegate = self
            stream.schedule(in: .main, forMode: .default)
            stream.open()
        }
    }

    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        switch eventCode {
        case .hasSpaceAvailable:
            writeMore()
        case .hasBytesAvailable:
            readAll()
        case .endEncountered:
            if received.count < payload.count { finish("error: the channel closed after \(received.count) of \(payload.count) bytes") }
        case .errorOccurred:
            finish("error: \(aStream.streamError?.localizedDescription ?? "stream error")")
        default:
            break
        }
    }

    private func writeMore() {
        guard let output = channel?.outputStream else { return }
        while sent < payload.count, output.hasSpaceAvailable {
            let n = payload.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.bindMemory(to: UInt8.self).baseAddress else { return 0 }
                return output.write(base + sent, maxLength: payload.count - sent)
            }
            guard n > 0 else { return }
            sent += n
        }
    }

    private func readAll() {
        guard let input = channel?.inputStream else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while input.hasBytesAvailable {
            let n = input.read(&buffer, maxLength: buffer.count)
            guard n > 0 else { break }
            received.append(contentsOf: buffer[0..<n])
        }
        guard received.count >= payload.count else { return }
        let seconds = max(Date().timeIntervalSince(opened), 0.001)
        if received == payload {
            status = 0
            finish("sent \(sent) bytes, received \(received.count): the echo matches (\(Int(Double(received.count) / seconds / 1000)) kB/s)")
        } else {
            let at = zip(received, payload).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? payload.count
            finish("error: the echo differs from what was sent at byte \(at)")
        }
    }

    /// Shows the outcome, closes the channel and the connection; `didDisconnectPeripheral` ends the app.
    private func finish(_ line: String) {
        show(line)
        channel?.inputStream.close()
        channel?.outputStream.close()
        if let target { central.cancelPeripheralConnection(target) } else { done(status) }
    }
}
