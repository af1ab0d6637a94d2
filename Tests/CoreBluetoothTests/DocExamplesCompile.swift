import CoreBluetooth

/// The CoreBluetooth examples of README.md and docs/COREBLUETOOTH.md, kept here so they keep
/// compiling (Swift 6 mode, `import CoreBluetooth` alone). `DocExamplesTests` checks that each
/// example's lines are here one after another (lines marked `// wrapper` aside). Never run: the first scans until stopped, the second
/// needs a peer with an L2CAP channel.
enum CoreBluetoothDocExamples {
    // README "CoreBluetooth code" and COREBLUETOOTH.md "What runs unchanged".
    final class Monitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
        var central: CBCentralManager!
        func start() { central = CBCentralManager(delegate: self, queue: nil) }
        func centralManagerDidUpdateState(_ central: CBCentralManager) {
            if central.state == .poweredOn { central.scanForPeripherals(withServices: [CBUUID(string: "180D")]) }
        }
        func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                            advertisementData: [String: Any], rssi RSSI: NSNumber) { print(peripheral.name ?? "unnamed", RSSI) }
    }

    @MainActor static func runMonitor() {  // wrapper: not in the example
        let monitor = Monitor()
        monitor.start()
        RunLoop.main.run()   // or dispatchMain()
    }  // wrapper: not in the example

    // COREBLUETOOTH.md "L2CAP channels": the two delegate methods of a class that opens a channel.
    final class ChannelClient: NSObject, CBPeripheralDelegate, StreamDelegate {
        var channel: CBL2CAPChannel!
        var received: [UInt8] = []
        func sendMore() {}

        func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
            guard let channel else { return print("no channel:", error as Any) }
            self.channel = channel                       // keep it: released, the channel closes
            for stream in [channel.inputStream as Stream, channel.outputStream as Stream] {
                stream.delegate = self
                stream.schedule(in: .main, forMode: .default)   // or .current from a main-queue callback
                stream.open()
            }
        }

        func stream(_ stream: Stream, handle event: Stream.Event) {
            switch event {
            case .hasBytesAvailable: var buffer = [UInt8](repeating: 0, count: 4096)
                                     let n = channel.inputStream.read(&buffer, maxLength: buffer.count)
                                     received.append(contentsOf: buffer.prefix(max(n, 0)))
            case .hasSpaceAvailable: sendMore()          // write(_:maxLength:) until it returns 0
            case .endEncountered:    print("the peer closed the channel")
            case .errorOccurred:     print("failed:", stream.streamError as Any)
            default: break
            }
        }
    }
}
