import BLE
import BLEProfiles
import BLEVirtual
import BLEWire
import Foundation

/// `ble demo`'s flow: the four seed systems of docs/SYSTEMS.md end to end in one virtual world. The
/// demo peripherals (`DemoPeripherals`) and one central join the world; the central finds them
/// all, then runs each system's central flow (the same code as `ble echo`, `ble fetch`, `ble
/// sample`, `ble heart-rate` and `ble accel`) and says what happened.
public enum SeedSystemsDemo {
    /// Runs the demo in `world`. The echo server fetches `image` (a file URL; it may hand out
    /// the files of `served` and nothing else) and the central saves what comes back to `saved`.
    /// The demo's own lines go to `output` (stdout by default); the echo flow's progress lines
    /// go to stdout as `ble echo` prints them.
    public static func run(in world: VirtualWorld, image: String, saveTo saved: String, served: ServedDirectory,
                           output: @escaping @Sendable (String) -> Void = { print($0) }) async throws {
        output("virtual radio: one medium, all in this process, in virtual time\n")
        let demo = try await DemoPeripherals.start(in: world, setup: DemoSetup(echoFiles: served))
        for e in demo.entries {
            output("peripheral  \(e.name.padding(12)) \(e.address)  advertising \(e.profile)")
        }
        let (central, _) = try await world.addCentral(address: BDAddress(rawValue: 0x00_5A_B1_00_00_10))
        output("central     \(central.controllerInfo.address)  scanning for 2 s\n")
        var found: Set<String> = []
        for try await device in central.scan(timeout: .seconds(2)) {
            guard let name = device.advertisement.localName, !found.contains(name) else { continue }
            found.insert(name)
            output("found       \(name.padding(12)) \(device.address)  rssi \(device.rssi.map(String.init) ?? "?")  \(device.advertisement.summary)")
        }

        output("\n— S1 echo: text over the framed stream")
        let printer = EchoOutput(json: false)
        let reply = try await EchoCentral.exchange(.text("hello from the demo"), using: central, report: printer.show)
        output("echo        \(reply.text ?? reply.body.hexString)")

        output("\n— S1 fetch: the peripheral fetches a URL and sends the image back")
        let url = URL(fileURLWithPath: image).absoluteString
        let picture = try await EchoCentral.exchange(.url(url), using: central, report: printer.show)
        guard picture.code == .image else { throw BLEError.invalidArgument("the echo server answered: \(picture.text ?? "?")") }
        try Data(picture.body).write(to: URL(fileURLWithPath: saved))
        let original = try Data(contentsOf: URL(fileURLWithPath: image))
        output("image       \(picture.body.count) bytes (a 64×48 PPM), saved to \(saved)\(Data(picture.body) == original ? ", identical to the original" : ", DIFFERENT from the original")")

        output("\n— S2 sample: the step-by-step central")
        var sampleOptions = SampleCentral.Options()
        sampleOptions.count = 2
        sampleOptions.writeNumber = 42
        _ = try await SampleCentral.run(using: central, options: sampleOptions) { output(SampleCentralLines.line(for: $0)) }

        output("\n— S3 heart rate")
        var heartOptions = HeartRateMonitorOptions()
        heartOptions.count = 6
        let monitor = HeartRateMonitor(central: central, options: heartOptions) { event in
            for line in HeartRateMonitorLines.lines(for: event) { output(line) }
        }
        try await monitor.run()

        output("\n— S4 accelerometer")
        var accelOptions = AccelerometerCentralOptions()
        accelOptions.count = 5
        let accelerometer = AccelerometerCentral(central: central, options: accelOptions) { event in
            for line in AccelerometerLines.lines(for: event) { output(line) }
        }
        try await accelerometer.run()

        output("\ndone: \(found.count) peripherals found; the echo reply, the image, the sample's steps, heart-rate readings and accelerometer samples, all on the virtual radio")
        await central.close()
        await demo.stop()
    }

    /// A small binary PPM (Netpbm P6): a colour gradient, the "image" the demo's echo server
    /// fetches and sends back.
    public static func gradientImage(width: Int, height: Int) -> [UInt8] {
        var bytes = Array("P6\n\(width) \(height)\n255\n".utf8)
        for y in 0..<height {
            for x in 0..<width {
                bytes += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), 128]
            }
        }
        return bytes
    }
}
