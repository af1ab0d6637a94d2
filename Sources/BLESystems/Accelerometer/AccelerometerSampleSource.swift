#if canImport(Glibc)
import Glibc
#endif
import BLEProfiles
import Dispatch

/// Where `ble serve accel` takes its readings from. SEEDS.md S4: a Linux machine has no
/// accelerometer, so samples come from a simulated motion, a file, or stdin.
enum AccelerometerSampleSource: Sendable {
    /// `SimulatedMotion`, sampled at the time since serving began.
    case simulated(SimulatedMotion)
    /// Lines of "x y z" (or "x, y, z"), one sample each, in order; lines that are not a sample
    /// (headers, comments, blanks) are skipped. The source ends with its input.
    case lines(LineStream, origin: String)

    /// `sim`, `-` (stdin) or a file path, as `--source` takes it. A file that cannot be opened
    /// is a clear error here, before anything starts.
    static func open(_ argument: String) throws -> AccelerometerSampleSource {
        switch argument {
        case "sim":
            return .simulated(SimulatedMotion())
        case "-":
            return .lines(LineStream(.standardInput), origin: "stdin")
        default:
            guard let file = fopen(argument, "r") else {
                throw UsageError("--source: cannot open '\(argument)': \(String(cString: strerror(errno)))")
            }
            return .lines(LineStream(.file(FileBox(file))), origin: argument)
        }
    }

    /// A source of fixed samples, as lines (tests, demos).
    static func samples(_ samples: [AccelerometerSample]) -> AccelerometerSampleSource {
        .lines(LineStream(samples.map { "\($0.x) \($0.y) \($0.z)" }), origin: "\(samples.count) samples")
    }

    var readsStandardInput: Bool {
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

/// An open C `FILE`, handed to the one reading thread.
struct FileBox: @unchecked Sendable {
    let file: UnsafeMutablePointer<FILE>
    init(_ file: UnsafeMutablePointer<FILE>) { self.file = file }
}

/// Reads text lines from a file or stdin on a thread of its own (blocking reads never hold a
/// thread of Swift's cooperative pool) and hands them over as a stream. The thread stays at most
/// `window` lines ahead of the consumer, who acknowledges each line it takes, so a fast
/// producer on stdin (`yes 0 0 1 | ble serve accel --source -`) is slowed to the sample rate
/// instead of filling memory.
struct LineStream: Sendable {
    let lines: AsyncStream<String>
    private let slots: DispatchSemaphore

    enum Input: Sendable {
        case standardInput
        case file(FileBox)
    }

    static let window = 64

    init(_ input: Input) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let slots = DispatchSemaphore(value: Self.window)
        self.lines = stream
        self.slots = slots
        // A consumer that goes away frees the reader wherever it waits.
        continuation.onTermination = { _ in for _ in 0...Self.window { slots.signal() } }
        DispatchQueue.global().async {
            let opened: UnsafeMutablePointer<FILE>?
            switch input {
            case .standardInput: opened = fdopen(STDIN_FILENO, "r")
            case let .file(box): opened = box.file
            }
            guard let file = opened else {
                continuation.finish()
                return
            }
            var buffer: UnsafeMutablePointer<CChar>?
            var capacity = 0
            while true {
                slots.wait()
                let count = getline(&buffer, &capacity, file)
                guard count >= 0, let buffer else { break }
                var line = String(cString: buffer)
                if line.hasSuffix("\n") { line.removeLast() }
                if case .terminated = continuation.yield(line) { break }
            }
            free(buffer)
            fclose(file)
            continuation.finish()
        }
    }

    /// The consumer took a line: the reader may read one more.
    func taken() { slots.signal() }
}

extension LineStream {
    /// Lines given up front (tests, demos): no reading thread.
    init(_ lines: [String]) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        for line in lines { continuation.yield(line) }
        continuation.finish()
        self.lines = stream
        self.slots = DispatchSemaphore(value: 0)
    }
}
