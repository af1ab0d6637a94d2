import BLEVirtual
import BLESystems
import Foundation

/// `ble demo`: the four seed systems of docs/SYSTEMS.md end to end on the built-in virtual radio, with
/// nothing attached (`SeedSystemsDemo`, in a world of its own in virtual time). The command
/// prepares the image the echo server fetches and says how long it all took.
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
        try Data(SeedSystemsDemo.gradientImage(width: 64, height: 48)).write(to: URL(fileURLWithPath: image))
        let saved = (directory as NSString).appendingPathComponent("received-image.ppm")
        let started = ContinuousClock.now
        // The echo server may hand out this directory's files and nothing else (`--files`).
        let served = try ServedDirectory(directory)
        let radioTime = try await VirtualWorld.run { world in
            try await SeedSystemsDemo.run(in: world, image: image, saveTo: saved, served: served)
            return world.clock.now()
        }
        let wall = ContinuousClock.now - started
        print("\n(\(Self.format(radioTime)) of virtual radio time in \(Self.format(wall)) of real time)")
    }

    static func temporaryDirectory() throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        return (base as NSString).appendingPathComponent("ble-demo-\(ProcessInfo.processInfo.processIdentifier)")
    }

    static func format(_ d: Duration) -> String {
        String(format: "%.2f s", d.seconds)
    }
}
