/// Reassembles S1 frames (SEEDS.md S1) from a byte stream cut anywhere: a frame may arrive over
/// many writes or notifications, and one of them may end a frame and start the next. Sans-IO:
/// feed it whatever the link delivered, in order.
///
/// Linear time over any chunking: every input byte is looked at once and copied once into the
/// header or the body being built; nothing already buffered is re-copied or re-scanned on a later
/// push (the original client re-copied its whole buffer per packet, quadratic for a large image).
/// The only other copying is the body array's geometric growth, amortized to at most one more copy
/// per byte, and, for input that is neither an array nor an array slice, one copy of each push
/// into an array first (the loop is non-generic so that it is fast across module boundaries).
///
/// A malformed header (unknown code, a SIZE that is not seven digits, a size over
/// `maximumBodySize`) is an error: an unknown code as soon as that byte arrives, the others as
/// soon as the eight header bytes are in, before any of that frame's body is buffered. Then the
/// stream is out of sync: the decoder stays failed, and every later push throws the same error
/// until `reset()`.
public struct FrameDecoder: Sendable {
    /// A header that has been read in full: what the body being collected belongs to.
    private struct Announced: Sendable {
        var code: FrameCode
        var size: Int
    }

    /// The largest body accepted; a header announcing more is rejected.
    public let maximumBodySize: Int
    /// The error that stopped the decoder, if any; cleared by `reset()`.
    public private(set) var failure: FrameError?

    private var header: [UInt8] = []
    private var announced: Announced?
    private var body: [UInt8] = []

    /// Bytes taken from input plus bytes moved when the body buffer grew: the decoder's work,
    /// which tests check stays proportional to the input (no timing involved).
    internal private(set) var bytesHandled = 0

    /// Body capacity reserved up front; larger bodies grow geometrically from here, so a peer that
    /// sends only a header announcing a huge body does not make the decoder allocate it all.
    private static let initialBodyCapacity = 64 * 1024

    /// `maximumBodySize` bounds what one frame may make the decoder buffer (negative means 0).
    public init(maximumBodySize: Int = 16 * 1024 * 1024) {
        self.maximumBodySize = max(0, maximumBodySize)
        header.reserveCapacity(Frame.headerLength)
    }

    /// Bytes held for the frame in progress (header and body so far).
    public var bufferedByteCount: Int { header.count + body.count }

    /// The body size the frame in progress announced, once its eight header bytes are in; nil
    /// between frames. With `bufferedByteCount` it tells a receiver how far a large `I` frame has
    /// got (the progress bar of `ble fetch`).
    public var announcedBodySize: Int? { announced?.size }

    /// Forgets the partial frame and any failure, as for a new connection.
    public mutating func reset() {
        header.removeAll(keepingCapacity: true)
        announced = nil
        body = []
        failure = nil
    }

    /// Appends bytes and returns every frame they complete, in order.
    ///
    /// On a malformed header this throws, and frames completed earlier in the same push are not
    /// returned; use `push(_:into:)` to keep them.
    public mutating func push(_ bytes: some Collection<UInt8>) throws(FrameError) -> [Frame] {
        var frames: [Frame] = []
        try push(bytes, into: &frames)
        return frames
    }

    /// Like `push(_:)`, but appends completed frames to `frames`, so those that came before a
    /// malformed header are already there when the error is thrown and can still be delivered.
    public mutating func push(_ bytes: some Collection<UInt8>, into frames: inout [Frame]) throws(FrameError) {
        if let failure { throw failure }
        // One non-generic loop over array storage (a generic one is not specialized across
        // modules and costs ~10x per byte); arrays and slices are used in place, any other
        // collection is copied once (still linear, and counted as work).
        let slice: ArraySlice<UInt8>
        if let array = bytes as? [UInt8] {
            slice = array[...]
        } else if let arraySlice = bytes as? ArraySlice<UInt8> {
            slice = arraySlice
        } else {
            slice = ArraySlice(bytes)
            bytesHandled += slice.count
        }
        do {
            try consume(slice, into: &frames)
        } catch {
            fail(error)
            throw error
        }
    }

    private mutating func consume(_ bytes: ArraySlice<UInt8>, into frames: inout [Frame]) throws(FrameError) {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if let current = announced {
                let end = min(bytes.endIndex, index + (current.size - body.count))
                appendToBody(bytes[index..<end])
                index = end
                if body.count == current.size {
                    frames.append(Frame(code: current.code, body: body))
                    body = []
                    announced = nil
                }
            } else {
                header.append(bytes[index])
                bytesHandled += 1
                index += 1
                if let empty = try headerByteArrived() { frames.append(empty) }
            }
        }
    }

    /// Checks the header so far. Returns a frame when a complete header announces an empty body.
    private mutating func headerByteArrived() throws(FrameError) -> Frame? {
        guard let first = header.first else { return nil }
        guard let code = FrameCode(rawValue: first) else { throw .unknownCode(first) }
        guard header.count == Frame.headerLength else { return nil }

        let sizeField = header[1...]
        var size = 0
        for digit in sizeField {
            guard (0x30...0x39).contains(digit) else { throw .invalidSize(Array(sizeField)) }
            size = size * 10 + Int(digit - 0x30)
        }
        guard size <= maximumBodySize else { throw .bodyTooLarge(size: size, limit: maximumBodySize) }

        header.removeAll(keepingCapacity: true)
        if size == 0 { return Frame(code: code) }
        announced = Announced(code: code, size: size)
        body.reserveCapacity(min(size, Self.initialBodyCapacity))
        return nil
    }

    private mutating func appendToBody(_ bytes: ArraySlice<UInt8>) {
        let countBefore = body.count
        let capacityBefore = body.capacity
        body.append(contentsOf: bytes)
        bytesHandled += body.count - countBefore
        if body.capacity != capacityBefore { bytesHandled += countBefore }
    }

    private mutating func fail(_ error: FrameError) {
        failure = error
        header.removeAll(keepingCapacity: true)
        announced = nil
        body = []
    }
}
