import BLE
import BLEVirtual
import BLEHost
import BLEProfiles
import BLESystems
import BLEVirtualRadio
import BLEWire
import Foundation

/// `ble demo`: the four seed systems of SEEDS.md end to end on the built-in virtual radio, with
/// nothing attached. Their peripherals (DemoPeripherals) and one central run in this process on
/// one virtual medium, in virtual time; the central finds them all, then runs each system's
/// central flow (the same code as `ble echo`, `ble fetch`, `ble sample`, `ble heart-rate` and
/// `ble accel`) and prints what happened.
struct DemoCommand: BLECommand {
    static let name = "demo"
    static let abstract = "Run the four seed systems, both roles, on the built-in virtual radio and print what happens (no hardware needed)."
    static let options: [CommandOption] = [
        .single("output", value: "DIR", help: "where the fetched image is saved (default: a new temporary directory)"),
    ]
    /// Its own virtual world, in virtual time: no controller, nothing on the shared radio.
    static let needs: CommandNeeds = []

    let output: String?

    init(_ args: ParsedArguments) throws {
        output = args.option("output")
    }

    func run() async throws {
        let directory = try output ?? Self.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let image = (directory as NSString).appendingPathComponent("demo-image.ppm")
        try Data(Self.gradientImage(width: 64, height: 48)).write(to: URL(fileURLWithPath: image))
        let saved = (directory as NSString).appendingPathComponent("received-image.ppm")
        let started = ContinuousClock.now
        // The echo server may hand out this directory's files and nothing else (`--files`).
        let served = try ServedDirectory(directory)
        let radioTime = try await VirtualWorld.run { world in
            try await Self.runDemo(in: world, image: image, saveTo: saved, served: served)
            return world.clock.now()
        }
        let wall = ContinuousClock.now - started
        print("\n(\(Self.format(radioTime)) of virtual radio time in \(Self.format(wall)) of real time)")
    }

    static func runDemo(in world: VirtualWorld, image: String, saveTo saved: String, served: ServedDirectory) async throws {
        print("virtual radio: one medium, all in this process, in virtual time\n")
        let demo = try await DemoPeripherals.start(in: world, setup: DemoSetup(echoFiles: served))
        for e in demo.entries {
            print("peripheral  \(e.name.padding(12)) \(e.address)  advertising \(e.profile)")
        }
        let (central, _) = try await world.addCentral(address: BDAddress(rawValue: 0x00_5A_B1_00_00_10))
        print("central     \(central.controllerInfo.address)  scanning for 2 s\n")
        var found: Set<String> = []
        for try await device in central.scan(timeout: .seconds(2)) {
            guard let name = device.advertisement.localName, !found.contains(name) else { continue }
            found.insert(name)
            print("found       \(name.padding(12)) \(device.address)  rssi \(device.rssi.map(String.init) ?? "?")  \(device.advertisement.summary)")
        }

        print("\n— S1 echo: text over the framed stream")
        let printer = EchoOutput(json: false)
        let reply = try await EchoCentral.exchange(.text("hello from the demo"), using: central, report: printer.show)
        print("echo        \(reply.text ?? reply.body.hexString)")

        print("\n— S1 fetch: the peripheral fetches a URL and sends the image back")
        let url = URL(fileURLWithPath: image).absoluteString
        let picture = try await EchoCentral.exchange(.url(url), using: central, report: printer.show)
        guard picture.code == .image else { throw BLEError.invalidArgument("the echo server answered: \(picture.text ?? "?")") }
        try Data(picture.body).write(to: URL(fileURLWithPath: saved))
        let original = try Data(contentsOf: URL(fileURLWithPath: image))
        print("image       \(picture.body.count) bytes (a 64×48 PPM), saved to \(saved)\(Data(picture.body) == original ? ", identical to the original" : ", DIFFERENT from the original")")

        print("\n— S2 sample: the step-by-step central")
        var sampleOptions = SampleCentral.Options()
        sampleOptions.count = 2
        sampleOptions.writeNumber = 42
        _ = try await SampleCentral.run(using: central, options: sampleOptions) { print(SampleCentralLines.line(for: $0)) }

        print("\n— S3 heart rate")
        var heartOptions = HeartRateMonitorOptions()
        heartOptions.count = 6
        let monitor = HeartRateMonitor(central: central, options: heartOptions) { event in
            for line in HeartRateMonitorLines.lines(for: event) { print(line) }
        }
        try await monitor.run()

        print("\n— S4 accelerometer")
        var accelOptions = AccelerometerCentralOptions()
        accelOptions.count = 5
        let accelerometer = AccelerometerCentral(central: central, options: accelOptions) { event in
            for line in AccelerometerLines.lines(for: event) { print(line) }
        }
        try await accelerometer.run()

        print("\ndone: \(found.count) peripherals found; the echo reply, the image, the sample's steps, heart-rate readings and accelerometer samples, all on the virtual radio")
        await central.close()
        await demo.stop()
    }

    static func temporaryDirectory() throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        return (base as NSString).appendingPathComponent("ble-demo-\(ProcessInfo.processInfo.processIdentifier)")
    }

    /// A small binary PPM (Netpbm P6): a colour gradient, the "image" the echo server fetches.
    static func gradientImage(width: Int, height: Int) -> [UInt8] {
        var bytes = Array("P6\n\(width) \(height)\n255\n".utf8)
        for y in 0..<height {
            for x in 0..<width {
                bytes += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), 128]
            }
        }
        return bytes
    }

    static func format(_ d: Duration) -> String {
        String(format: "%.2f s", d.seconds)
    }
}
