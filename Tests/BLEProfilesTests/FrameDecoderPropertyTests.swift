import BLEWire
import XCTest
@testable import BLEProfiles

/// The S1 reassembly property (docs/SYSTEMS.md S1): random frames, concatenated and cut anywhere, come
/// out identical; and the decoder's work stays proportional to its input.
final class FrameDecoderPropertyTests: XCTestCase {
    /// Frames with all four codes and bodies of 0...5000 bytes (N stays empty, as the spec says).
    private func randomFrames(_ rng: inout SplitMix64) -> [Frame] {
        (0..<Int.random(in: 1...12, using: &rng)).map { _ in
            let code = FrameCode.allCases.randomElement(using: &rng) ?? .text
            if code == .notify { return .notify }
            // Half the bodies short, so that many frames fall inside one chunk.
            let length = Bool.random(using: &rng) ? Int.random(in: 0...40, using: &rng) : Int.random(in: 0...5000, using: &rng)
            return Frame(code: code, body: (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    /// Chunk lengths: single bytes, a few bytes (splitting headers), about a write, or large
    /// enough to span several frames.
    private func chunkLength(_ rng: inout SplitMix64) -> Int {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return 1
        case 1: return Int.random(in: 2...9, using: &rng)
        case 2: return Int.random(in: 10...244, using: &rng)
        default: return Int.random(in: 245...20_000, using: &rng)
        }
    }

    func testRandomChunkingReassemblesEveryFrame() throws {
        for seed in UInt64(1)...150 {
            var rng = SplitMix64(seed: seed)
            let frames = randomFrames(&rng)
            var stream: [UInt8] = []
            for frame in frames { stream += try frame.encoded() }

            var decoder = FrameDecoder(maximumBodySize: 5000)
            var decoded: [Frame] = []
            var start = 0
            var chunks = 0
            while start < stream.count {
                let end = min(stream.count, start + chunkLength(&rng))
                decoded += try decoder.push(stream[start..<end])
                start = end
                chunks += 1
            }
            XCTAssertEqual(decoded, frames, "seed \(seed), \(chunks) chunks")
            XCTAssertEqual(decoder.bufferedByteCount, 0, "seed \(seed)")
            XCTAssertLessThanOrEqual(decoder.bytesHandled, 2 * stream.count, "seed \(seed)")
        }
    }

    /// Refused frames (too large, `N` with a body) mixed in, bodies of any bytes, the stream cut
    /// anywhere: the skipping push reports each refusal once and every good frame, in order.
    func testRefusedFramesAreSkippedWhereverTheStreamIsCut() throws {
        for seed in UInt64(500)...600 {
            var rng = SplitMix64(seed: seed)
            var expected: [FrameDecoder.Output] = []
            var stream: [UInt8] = []
            for frame in randomFrames(&rng) {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    let size = Int.random(in: 2001...6000, using: &rng)
                    stream += Array("I\(String(repeating: "0", count: 7 - String(size).count))\(size)".utf8)
                    // A body that is a valid stream of frames: none of it may come out.
                    let decoy = try Frame.text("decoy").encoded()
                    stream += (0..<size).map { decoy[$0 % decoy.count] }
                    expected.append(.refused(.bodyTooLarge(size: size, limit: 2000)))
                case 1:
                    let size = Int.random(in: 1...30, using: &rng)
                    stream += Array("N00000\(size < 10 ? "0" : "")\(size)".utf8) + [UInt8](repeating: 0x4E, count: size)
                    expected.append(.refused(.notifyWithBody(size: size)))
                default:
                    guard frame.body.count <= 2000 else { continue }
                    stream += try frame.encoded()
                    expected.append(.frame(frame))
                }
            }
            var decoder = FrameDecoder(maximumBodySize: 2000)
            var outputs: [FrameDecoder.Output] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + chunkLength(&rng))
                try decoder.push(stream[start..<end], skippingRefused: &outputs)
                start = end
            }
            XCTAssertEqual(outputs, expected, "seed \(seed)")
            XCTAssertEqual(decoder.bufferedByteCount + decoder.bytesToSkip, 0, "seed \(seed)")
            XCTAssertLessThanOrEqual(decoder.bytesHandled, 2 * stream.count, "seed \(seed)")
        }
    }

    func testWholeStreamAndByteByByteGiveTheSameFrames() throws {
        for seed in UInt64(1000)...1010 {
            var rng = SplitMix64(seed: seed)
            let frames = randomFrames(&rng)
            var stream: [UInt8] = []
            for frame in frames { stream += try frame.encoded() }

            var whole = FrameDecoder()
            XCTAssertEqual(try whole.push(stream), frames, "seed \(seed)")

            var single = FrameDecoder()
            var decoded: [Frame] = []
            for byte in stream { decoded += try single.push(CollectionOfOne(byte)) }
            XCTAssertEqual(decoded, frames, "seed \(seed)")
        }
    }

    /// Linear time without a clock: feeding a 1 MiB frame one byte at a time, the decoder handles
    /// each byte once, plus the amortized moves of its growing body buffer (at most the input
    /// again). A decoder that re-copied or re-scanned its buffer per push would count ~n²/2.
    func testWorkStaysLinearForAOneMebibyteFrameFedByteByByte() throws {
        let body = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let stream = try Frame.image(body).encoded()
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        for byte in stream {
            try decoder.push([byte], into: &frames)
        }
        XCTAssertEqual(frames, [.image(body)])
        XCTAssertGreaterThanOrEqual(decoder.bytesHandled, stream.count)
        XCTAssertLessThanOrEqual(decoder.bytesHandled, 2 * stream.count)
    }

    /// The same for a collection that is not an array: each push is copied once more.
    func testWorkStaysLinearForOtherCollections() throws {
        let body = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let stream = try Frame.image(body).encoded()
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        for byte in stream {
            try decoder.push(CollectionOfOne(byte), into: &frames)
        }
        XCTAssertEqual(frames, [.image(body)])
        XCTAssertLessThanOrEqual(decoder.bytesHandled, 3 * stream.count)
    }

    func testGeneratorIsDeterministic() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        XCTAssertEqual(first, (0..<8).map { _ in b.next() })
        XCTAssertNotEqual(first, (0..<8).map { _ in c.next() })
        // SplitMix64's published first output for seed 0.
        var zero = SplitMix64(seed: 0)
        XCTAssertEqual(zero.next(), 0xE220_A839_7B1D_CDAF)
    }
}
