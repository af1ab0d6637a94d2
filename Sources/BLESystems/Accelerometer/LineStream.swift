#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// An open C `FILE`, handed to the one reading thread.
public struct FileBox: @unchecked Sendable {
    /// The open file; whoever holds the box closes it once.
    public let file: UnsafeMutablePointer<FILE>
    /// Boxes a file opened with fopen(3).
    public init(_ file: UnsafeMutablePointer<FILE>) { self.file = file }
}

/// Reads text lines from a file or stdin on a thread of its own (blocking reads never hold a
/// thread of Swift's cooperative pool) and hands them over as a stream. The thread stays at most
/// `window` lines ahead of the consumer, who acknowledges each line it takes, so a fast
/// producer on stdin (`yes 0 0 1 | ble serve accel --source -`) is slowed to the sample rate
/// instead of filling memory.
public struct LineStream: Sendable {
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
    public init(_ lines: [String]) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        for line in lines { continuation.yield(line) }
        continuation.finish()
        self.lines = stream
        self.slots = DispatchSemaphore(value: 0)
    }
}
