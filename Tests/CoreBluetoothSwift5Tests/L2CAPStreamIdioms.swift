// The L2CAP half of an iOS app's BLE class as such apps write it (Swift 5 language mode): the
// channel in an implicitly unwrapped property, both streams scheduled in the current run loop,
// a `StreamDelegate` switch over `Stream.Event`, `read` into an array and `write` from an array
// and from `Data`. It must compile against `import CoreBluetooth` unchanged.
import CoreBluetooth
import XCTest

class L2CAPStreamer: NSObject, CBPeripheralManagerDelegate, StreamDelegate {
    var peripheralManager: CBPeripheralManager!
    var channel: CBL2CAPChannel!
    var publishedPSM: CBL2CAPPSM = 0
    var outgoing = Data()
    var received = Data()
    var log: [String] = []

    func start() {
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil, options: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        if peripheral.state == .poweredOn {
            peripheral.publishL2CAPChannel(withEncryption: false)
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        if let error = error {
            log.append("publish failed: \(error.localizedDescription)")
            return
        }
        publishedPSM = PSM
        log.append("published PSM \(PSM)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel = channel else { return }
        self.channel = channel
        channel.inputStream.delegate = self
        channel.outputStream.delegate = self
        channel.inputStream.schedule(in: RunLoop.current, forMode: .default)
        channel.outputStream.schedule(in: RunLoop.current, forMode: .default)
        channel.inputStream.open()
        channel.outputStream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        switch eventCode {
        case Stream.Event.openCompleted:
            log.append(aStream == channel.inputStream ? "input open" : "output open")
        case Stream.Event.hasBytesAvailable:
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = channel.inputStream.read(&buffer, maxLength: buffer.count)
            if count > 0 { received.append(buffer, count: count) }
        case Stream.Event.hasSpaceAvailable:
            send()
        case Stream.Event.endEncountered:
            aStream.close()
            aStream.remove(from: .current, forMode: .default)
        case Stream.Event.errorOccurred:
            log.append("stream error: \(aStream.streamError?.localizedDescription ?? "?")")
        default:
            break
        }
    }

    func send() {
        guard !outgoing.isEmpty, channel.outputStream.hasSpaceAvailable else { return }
        let bytes = [UInt8](outgoing)
        let written = channel.outputStream.write(bytes, maxLength: bytes.count)
        if written > 0 { outgoing.removeFirst(written) }
        _ = "ok".data(using: .utf8)!.withUnsafeBytes { pointer in
            channel.outputStream.write(pointer.bindMemory(to: UInt8.self).baseAddress!, maxLength: 0)
        }
    }
}

final class L2CAPStreamIdiomsTests: XCTestCase {
    /// The class above compiles, and publishing gives it a PSM from the dynamic range.
    func testTheStreamClassCompilesAndPublishes() {
        let streamer = L2CAPStreamer()
        let saved = ProcessInfo.processInfo.environment["BLE_HCI"]
        setenv("BLE_HCI", "virtual", 1)
        defer { if let saved = saved { setenv("BLE_HCI", saved, 1) } else { unsetenv("BLE_HCI") } }
        streamer.start()
        let deadline = Date().addingTimeInterval(15)
        while streamer.log.isEmpty, Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.05))
        }
        XCTAssertEqual(streamer.log.first, "published PSM \(streamer.publishedPSM)")
        XCTAssertTrue((0x0080...0x00FF).contains(streamer.publishedPSM))
    }
}
