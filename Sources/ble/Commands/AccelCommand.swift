#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEProfiles
import BLESystems
import BLEWire

/// `ble accel [ADDRESS]`: the S4 charting central (`AccelerometerCentral`).
struct AccelCommand: BLECommand {
    static let name = "accel"
    static let abstract = "Accelerometer central: find a device named *ble*, subscribe to 0012, chart x, y, z live."
    static let positionals: [CommandPositional] = [.optional("ADDRESS")]
    static let options: [CommandOption] = [
        mtuOption,
        .single("count", value: "N", help: "stop after N samples"),
        .flag("json", help: "one {\"x\",\"y\",\"z\"} object per sample, nothing else on stdout"),
        .single("plot", value: "FILE.svg", help: "write an SVG chart of the whole session to FILE.svg when it ends"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]
    static let discussion = """
    Without ADDRESS it scans 5 s (no service filter) and lists the devices whose name contains
    "ble" in any case. On a terminal you pick one by number; otherwise the first listed device
    that advertises service 0011 is taken. It then connects, discovers service 0011 and
    characteristic 0012, subscribes, and shows x, y and z (g) as a live chart on a terminal, or
    one line per sample otherwise. It ends after --count samples, on Ctrl-C, or (status 1) when
    the peripheral disconnects or sends nothing for 10 s; --plot is written in every case.
    """

    var controller: ControllerOptions
    var central: AccelerometerCentralOptions
    var json: Bool
    var plot: String?

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        central = AccelerometerCentralOptions()
        central.mtu = controller.mtu
        central.target = try args.positionals.first.map(AddressArgument.init)
        central.count = try args.int("count")
        if let count = central.count, count <= 0 { throw UsageError("--count must be positive") }
        json = args.flag("json")
        plot = args.option("plot")
    }

    func run() async throws {
        // Opened first, so a path that cannot be written fails before the session, not after;
        // then written and closed on every way out, opening the controller included (a chart
        // with no samples when none came).
        let plotFile = try plot.map(PlotFile.init)
        let live = !json && TerminalScreen.isStandardOutput
        let output = AccelerometerOutput(mode: json ? .json : (live ? .live : .plain))
        let ask: AccelerometerCentral.Picker = { @Sendable candidates in try await Self.ask(candidates) }
        try await output.chart(opening: { [controller] in try await controller.openCentral() }, options: central, pick: live && TerminalScreen.isStandardInput ? ask : nil,
                               plot: plotFile.map { file in { try file.write($0) } })
    }

    /// Prints the numbered list and reads the user's choice from the terminal. Ctrl-C or
    /// SIGTERM (the command's task cancelled) ends the wait with `CancellationError`.
    static func ask(_ candidates: [ScannedDevice]) async throws -> ScannedDevice {
        while true {
            print("connect to which device? [1-\(candidates.count), Enter = 1] ", terminator: "")
            flushOutput()
            guard let answer = try await readLineFromStandardInput(about: "which device to connect to") else { throw AccelerometerCentralError.notPicked }
            if let index = AccelerometerDeviceChoice.parsePick(answer, count: candidates.count) { return candidates[index] }
            print("'\(answer)' is not one of 1-\(candidates.count)")
        }
    }
}

/// The SVG file `--plot` names, opened (created or emptied) when the command starts.
struct PlotFile: Sendable {
    let path: String
    private let file: FileBox

    init(_ path: String) throws {
        guard let file = fopen(path, "w") else {
            throw UsageError("--plot: cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.file = FileBox(file)
    }

    /// Writes the chart and closes the file; called once, on whichever way the command ends.
    func write(_ text: String) throws {
        defer { fclose(file.file) }
        guard fputs(text, file.file) >= 0, fflush(file.file) == 0 else {
            throw BLEError.invalidArgument("--plot: writing '\(path)' failed: \(String(cString: strerror(errno)))")
        }
    }
}
