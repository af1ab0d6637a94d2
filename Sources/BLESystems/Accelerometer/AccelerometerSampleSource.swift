#if canImport(Glibc)
import Glibc
#endif
import BLEProfiles
import Dispatch

/// Where `ble serve accel` takes its readings from. docs/SYSTEMS.md S4: a Linux machine has no
/// accelerometer, so samples come from a simulated motion, a file, or stdin.
public enum AccelerometerSampleSource: Sendable {
    /// `SimulatedMotion`, sampled at the time since serving began.
    case simulated(SimulatedMotion)
    /// Lines of "x y z" (or "x, y, z"), one sample each, in order; lines that are not a sample
    /// (headers, comments, blanks) are skipped. The source ends with its input.
    case lines(LineStream, origin: String)

    /// `sim`, `-` (stdin) or a file path, as `--source` takes it. A file that cannot be opened
    /// is a clear error here, before anything starts.
    public static func open(_ argument: String) throws -> AccelerometerSampleSource {
        switch argument {
        case "sim":
            return .simulated(SimulatedMotion())
        case "-":
            return .lines(LineStream(.standardInput), origin: "stdin")
        default:
            guard let file = fopen(argument, "r") else {
                throw ServeOptionError("--source: cannot open '\(argument)': \(String(cString: strerror(errno)))")
            }
            return .lines(LineStream(.file(FileBox(file))), origin: argument)
        }
    }

    /// A source of fixed samples, as lines (tests, demos).
    public static func samples(_ samples: [AccelerometerSample]) -> AccelerometerSampleSource {
        .lines(LineStream(samples.map { "\($0.x) \($0.y) \($0.z)" }), origin: "\(samples.count) samples")
    }

    /// Whether samples come from stdin (the keyboard then cannot toggle advertising).
    public var readsStandardInput: Bool {
        if case .lines(_, "stdin") = self { return true }
        return false
    }
}

/// Takes samples from a source, one at a time.
struct AccelerometerSampleReader {
    private let source: AccelerometerSampleSource
    private var lines: AsyncStream<String>.AsyncIterator?
    private var stream: LineStream?
    /// Lines skipped because they were not "x y z".
    private(set) var skipped = 0

    init(_ source: AccelerometerSampleSource) {
        self.source = source
        if case let .lines(stream, _) = source {
            self.stream = stream
            lines = stream.lines.makeAsyncIterator()
        }
    }

    /// The reading `elapsed` after the start, or nil once a file or stdin has ended.
    mutating func next(at elapsed: Duration) async -> AccelerometerSample? {
        switch source {
        case let .simulated(motion):
            return motion.sample(at: elapsed)
        case .lines:
            while let line = await lines?.next() {
                stream?.taken()
                if let sample = AccelerometerSample(line: line) { return sample }
                skipped += 1
            }
            return nil
        }
    }
}
