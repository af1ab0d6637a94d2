/// Reassembles S1 frames (docs/SYSTEMS.md S1) from a byte stream cut anywhere: a frame may arrive over
/// many writes or notifications, and one of them may end a frame and start the next. Sans-IO:
/// feed it whatever the link delivered, in order.
///
/// Linear time over any chunking: every input byte is looked at once and copied once into the
/// header or the body being built; nothing already buffered is re-copied or re-scanned on a later
/// push (the original client re-copied its whole buffer per packet, quadratic for a large image).
/// The only other copying is the body array's one growth: it starts with room for 64 KiB, and once
/// the body passes that it gets room for all the announced size at once, so at most 64 KiB is copied
/// again (a chain of doublings would allocate and touch fresh memory at every step, which made one
/// 9 MB frame cost 40× a 0.9 MB one), and, for input that is neither an array nor an array slice, one copy of each push
/// into an array first (the loop is non-generic so that it is fast across module boundaries).
///
/// A bad header is an error: an unknown code as soon as that byte arrives, the others (a SIZE
/// that is not seven digits, a size over `maximumBodySize`, an `N` frame announcing a body) as
/// soon as the eight header bytes are in, before any of that frame's body is buffered.
///
/// Two kinds of bad header call for different handling:
/// - out of sync (`unknownCode`, `invalidSize`): nothing says where the next frame starts. The
///   decoder stays failed and every later push throws the same error until `reset()`.
/// - refused (`bodyTooLarge`, `notifyWithBody`): the header is well formed, so the stream is in
///   step; only this frame is unwanted. `push(_:)` and `push(_:into:)` treat it like the first
///   kind (a receiver that expects nothing of the sort gives up). `push(_:skippingRefused:)`
///   reports it once as `.refused` and then skips exactly the announced body, across as many
///   pushes as it takes, so that none of its bytes is read as a header (an `I` frame's body can
///   hold anything, including bytes that look like a `U` frame).
public struct FrameDecoder: Sendable {
    /// What `push(_:skippingRefused:)` found, in stream order.
    public enum Output: Equatable, Sendable {
        /// A complete frame.
        case frame(Frame)
        /// A frame refused for what its well-formed header announces (`FrameError.isRefusal`);
        /// its body is skipped, not buffered.
        case refused(FrameError)
    }

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
    /// Body bytes of a refused frame still to come, skipped as they arrive.
    public private(set) var bytesToSkip = 0

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
        bytesToSkip = 0
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
        var outputs: [Output] = []
        defer {
            for case let .frame(frame) in outputs { frames.append(frame) }
        }
        try decode(bytes, skippingRefused: false, into: &outputs)
    }

    /// Appends bytes for a receiver that carries on after a refused frame (the echo server):
    /// appends every frame they complete and every refusal (`FrameError.isRefusal`), in stream
    /// order, skipping each refused frame's body. Throws only when the stream is out of sync
    /// (`unknownCode`, `invalidSize`), after appending what came before; the decoder then stays
    /// failed until `reset()`.
    public mutating func push(_ bytes: some Collection<UInt8>, skippingRefused outputs: inout [Output]) throws(FrameError) {
        try decode(bytes, skippingRefused: true, into: &outputs)
    }

    private mutating func decode(_ bytes: some Collection<UInt8>, skippingRefused: Bool, into outputs: inout [Output]) throws(FrameError) {
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
            try consume(slice, skippingRefused: skippingRefused, into: &outputs)
        } catch {
            fail(error)
            throw error
        }
    }

    private mutating func consume(_ bytes: ArraySlice<UInt8>, skippingRefused: Bool, into outputs: inout [Output]) throws(FrameError) {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytesToSkip > 0 {
                let skipped = min(bytesToSkip, bytes.endIndex - index)
                bytesToSkip -= skipped
                bytesHandled += skipped
                index += skipped
            } else if let current = announced {
                let end = min(bytes.endIndex, index + (current.size - body.count))
                appendToBody(bytes[index..<end], announced: current.size)
                index = end
                if body.count == current.size {
                    outputs.append(.frame(Frame(code: current.code, body: body)))
                    body = []
                    announced = nil
                }
            } else {
                header.append(bytes[index])
                bytesHandled += 1
                index += 1
                do {
                    if let empty = try headerByteArrived() { outputs.append(.frame(empty)) }
                } catch let refusal where skippingRefused && refusal.isRefusal {
                    header.removeAll(keepingCapacity: true)
                    bytesToSkip = refusal.announcedBodySize ?? 0
                    outputs.append(.refused(refusal))
                }
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
        // docs/SYSTEMS.md S1: `N` is a bare notification; a body means the peer does not speak the protocol.
        guard code != .notify || size == 0 else { throw .notifyWithBody(size: size) }

        header.removeAll(keepingCapacity: true)
        if size == 0 { return Frame(code: code) }
        announced = Announced(code: code, size: size)
        body.reserveCapacity(min(size, Self.initialBodyCapacity))
        return nil
    }

    private mutating func appendToBody(_ bytes: ArraySlice<UInt8>, announced size: Int) {
        let countBefore = body.count
        let capacityBefore = body.capacity
        // Past the first 64 KiB the peer is sending the body it announced: room for all of it.
        if countBefore + bytes.count > capacityBefore { body.reserveCapacity(size) }
        body.append(contentsOf: bytes)
        bytesHandled += body.count - countBefore
        if body.capacity != capacityBefore { bytesHandled += countBefore }
    }

    private mutating func fail(_ error: FrameError) {
        failure = error
        header.removeAll(keepingCapacity: true)
        announced = nil
        body = []
        bytesToSkip = 0
    }
}
