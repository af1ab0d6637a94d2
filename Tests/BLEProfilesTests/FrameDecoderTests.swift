import XCTest
@testable import BLEProfiles

/// Reassembling S1 frames and rejecting malformed headers (docs/SYSTEMS.md S1).
final class FrameDecoderTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testOneFrameInOnePush() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push(bytes("T0000005hello")), [.text("hello")])
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testOnePushEndsOneFrameAndStartsTheNext() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push(bytes("T00000")), [])
        XCTAssertEqual(decoder.bufferedByteCount, 6)
        XCTAssertEqual(try decoder.push(bytes("02hiN0000000U00")), [.text("hi"), .notify])
        XCTAssertEqual(decoder.bufferedByteCount, 3)
        XCTAssertEqual(try decoder.push(bytes("00003a")), [])
        XCTAssertEqual(decoder.bufferedByteCount, 1)
        XCTAssertEqual(try decoder.push(bytes("bcT0000000")), [.url("abc"), .text("")])
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testAnnouncedBodySizeIsKnownOnceTheHeaderIsIn() throws {
        var decoder = FrameDecoder()
        XCTAssertNil(decoder.announcedBodySize)
        XCTAssertEqual(try decoder.push(bytes("I000001")), [])
        XCTAssertNil(decoder.announcedBodySize, "seven of eight header bytes")
        XCTAssertEqual(try decoder.push(bytes("0abcd")), [])
        XCTAssertEqual(decoder.announcedBodySize, 10)
        XCTAssertEqual(decoder.bufferedByteCount, 4, "body bytes so far")
        XCTAssertEqual(try decoder.push(bytes("efghij")).count, 1)
        XCTAssertNil(decoder.announcedBodySize, "between frames")
    }

    func testEmptyPushAndEmptyBodies() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push([UInt8]()), [])
        XCTAssertEqual(try decoder.push(bytes("N0000000N0000000I0000000")), [.notify, .notify, .image([])])
    }

    func testAnyCollectionOfBytes() throws {
        var decoder = FrameDecoder()
        let stream = bytes("xxT0000003abcyy")
        // A slice whose indices do not start at 0, then a non-random-access view.
        XCTAssertEqual(try decoder.push(stream[2..<10]), [])
        XCTAssertEqual(try decoder.push(stream[10..<13]), [.text("abc")])
        XCTAssertEqual(try decoder.push("I0000002".utf8), [])
        XCTAssertEqual(try decoder.push(CollectionOfOne(0xFF)), [])
        XCTAssertEqual(try decoder.push([0xD8][...]), [.image([0xFF, 0xD8])])
    }

    func testUnknownCodeIsReportedAtTheFirstByte() {
        for code in [UInt8(0x00), 0x41, 0x6E /* n */, 0x74 /* t */, 0x30, 0xFF] {
            var decoder = FrameDecoder()
            XCTAssertThrowsError(try decoder.push([code])) { error in
                XCTAssertEqual(error as? FrameError, .unknownCode(code))
            }
        }
    }

    func testSizeThatIsNotSevenDigits() {
        for size in ["00a0001", "+000001", " 000001", "000001 ", "-000001", "0000１0", "\u{0}000000"] {
            var decoder = FrameDecoder()
            let header = [UInt8(0x54)] + Array(size.utf8).prefix(7)
            XCTAssertThrowsError(try decoder.push(header), size) { error in
                XCTAssertEqual(error as? FrameError, .invalidSize(Array(header.dropFirst())), size)
            }
        }
    }

    func testSizeErrorWaitsForTheWholeField() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push(bytes("T00x")), [])
        XCTAssertThrowsError(try decoder.push(bytes("0001"))) { error in
            XCTAssertEqual(error as? FrameError, .invalidSize(self.bytes("00x0001")))
        }
    }

    func testOversizeIsRejectedAtTheHeaderBeforeAnyBody() throws {
        var decoder = FrameDecoder(maximumBodySize: 10)
        XCTAssertEqual(try decoder.push(bytes("T0000010")), [])
        XCTAssertEqual(try decoder.push(bytes("0123456789")), [.text("0123456789")])
        XCTAssertThrowsError(try decoder.push(bytes("T0000011"))) { error in
            XCTAssertEqual(error as? FrameError, .bodyTooLarge(size: 11, limit: 10))
        }
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testOversizeWithBodyBytesInTheSamePush() {
        var decoder = FrameDecoder(maximumBodySize: 1_000_000)
        let stream = bytes("I9999999") + [UInt8](repeating: 0, count: 100)
        XCTAssertThrowsError(try decoder.push(stream)) { error in
            XCTAssertEqual(error as? FrameError, .bodyTooLarge(size: 9_999_999, limit: 1_000_000))
        }
        XCTAssertEqual(decoder.bufferedByteCount, 0)
        XCTAssertEqual(decoder.bytesHandled, 8, "no body byte is taken after a rejected header")
    }

    func testDefaultLimitIsSixteenMebibytes() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(decoder.maximumBodySize, 16 * 1024 * 1024)
        XCTAssertEqual(try decoder.push(bytes("I9999999")), [])
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testNegativeLimitAcceptsOnlyEmptyBodies() throws {
        var decoder = FrameDecoder(maximumBodySize: -1)
        XCTAssertEqual(decoder.maximumBodySize, 0)
        XCTAssertEqual(try decoder.push(bytes("N0000000")), [.notify])
        XCTAssertThrowsError(try decoder.push(bytes("T0000001")))
    }

    func testErrorsAreStickyUntilReset() throws {
        var decoder = FrameDecoder()
        XCTAssertThrowsError(try decoder.push(bytes("X")))
        XCTAssertEqual(decoder.failure, .unknownCode(0x58))
        for later in [bytes("T0000002hi"), [], bytes("N0000000")] {
            XCTAssertThrowsError(try decoder.push(later)) { error in
                XCTAssertEqual(error as? FrameError, .unknownCode(0x58))
            }
        }
        decoder.reset()
        XCTAssertNil(decoder.failure)
        XCTAssertEqual(try decoder.push(bytes("T0000002hi")), [.text("hi")])
    }

    func testResetDropsAPartialFrame() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push(bytes("T0000005he")), [])
        XCTAssertEqual(decoder.bufferedByteCount, 2)
        decoder.reset()
        XCTAssertEqual(decoder.bufferedByteCount, 0)
        XCTAssertEqual(try decoder.push(bytes("N0000000")), [.notify])
    }

    func testFramesBeforeABadHeaderCanStillBeDelivered() {
        let stream = bytes("T0000001aN0000000Z0000000T0000001b")
        var plain = FrameDecoder()
        XCTAssertThrowsError(try plain.push(stream))

        var decoder = FrameDecoder()
        var frames: [Frame] = []
        XCTAssertThrowsError(try decoder.push(stream, into: &frames)) { error in
            XCTAssertEqual(error as? FrameError, .unknownCode(0x5A))
        }
        XCTAssertEqual(frames, [.text("a"), .notify])
        XCTAssertThrowsError(try decoder.push(bytes("N0000000"), into: &frames))
        XCTAssertEqual(frames.count, 2)
    }

    /// docs/SYSTEMS.md S1: `N` is a bare notification. One that announces a body is an error as soon
    /// as its header is in, before any of the body is taken.
    func testNotifyWithABodyIsAnError() throws {
        var decoder = FrameDecoder()
        XCTAssertEqual(try decoder.push(bytes("N0000000")), [.notify])
        XCTAssertThrowsError(try decoder.push(bytes("N0000001!"))) { error in
            XCTAssertEqual(error as? FrameError, .notifyWithBody(size: 1))
            XCTAssertEqual("\(error)", "framed stream: an N frame announces a body of 1 bytes; N frames have none")
        }
        XCTAssertEqual(decoder.failure, .notifyWithBody(size: 1), "the plain push gives up, as for any bad header")
        XCTAssertThrowsError(try Frame(code: .notify, body: [0x21]).encoded()) { error in
            XCTAssertEqual(error as? FrameError, .notifyWithBody(size: 1), "nor is one encoded")
        }
    }

    func testRefusalsAreTheErrorsWhoseHeaderSaysWhereTheNextFrameStarts() {
        XCTAssertTrue(FrameError.bodyTooLarge(size: 11, limit: 10).isRefusal)
        XCTAssertEqual(FrameError.bodyTooLarge(size: 11, limit: 10).announcedBodySize, 11)
        XCTAssertTrue(FrameError.notifyWithBody(size: 3).isRefusal)
        XCTAssertFalse(FrameError.unknownCode(0x58).isRefusal)
        XCTAssertFalse(FrameError.invalidSize(bytes("00x0001")).isRefusal)
        XCTAssertFalse(FrameError.bodyTooLongToEncode(10_000_000).isRefusal)
    }

    /// A frame refused for its size is reported once, and then exactly its body is skipped,
    /// across later pushes: body bytes that look like a header are not read as one, and the
    /// frame after it decodes.
    func testARefusedBodyIsSkippedAcrossPushesAndTheStreamStaysInStep() throws {
        var decoder = FrameDecoder(maximumBodySize: 10)
        var outputs: [FrameDecoder.Output] = []
        try decoder.push(bytes("T0000001aI0000020U000000"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [.frame(.text("a")), .refused(.bodyTooLarge(size: 20, limit: 10))])
        XCTAssertEqual(decoder.bytesToSkip, 13, "20 announced, 7 of them in this push")
        XCTAssertEqual(decoder.bufferedByteCount, 0, "nothing of a refused body is buffered")
        XCTAssertNil(decoder.announcedBodySize)
        XCTAssertNil(decoder.failure)
        outputs = []
        try decoder.push(bytes("3abcT000000"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [], "headers inside the body are body")
        XCTAssertEqual(decoder.bytesToSkip, 2)
        try decoder.push(bytes("1x"), skippingRefused: &outputs)
        XCTAssertEqual(decoder.bytesToSkip, 0)
        try decoder.push(bytes("T0000002ok"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [.frame(.text("ok"))], "the next frame starts right after the 20 bytes")
        XCTAssertEqual(decoder.bytesToSkip, 0)
    }

    func testAnNFrameWithABodyIsRefusedAndSkippedInOnePush() throws {
        var decoder = FrameDecoder()
        var outputs: [FrameDecoder.Output] = []
        try decoder.push(bytes("N0000003T00N0000000T0000002hi"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [.refused(.notifyWithBody(size: 3)), .frame(.notify), .frame(.text("hi"))])
    }

    /// Out-of-sync errors still stop the skipping push: what came before is kept, the decoder
    /// stays failed until reset, and reset also forgets a skip in progress.
    func testSkippingPushStillFailsWhenTheStreamIsOutOfSync() throws {
        var decoder = FrameDecoder(maximumBodySize: 4)
        var outputs: [FrameDecoder.Output] = []
        try decoder.push(bytes("T0000001aT0000009xX"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [.frame(.text("a")), .refused(.bodyTooLarge(size: 9, limit: 4))])
        XCTAssertEqual(decoder.bytesToSkip, 7, "9 announced, x and X skipped: the X is body, not a code")
        XCTAssertNil(decoder.failure)

        outputs = []
        XCTAssertThrowsError(try decoder.push(bytes("1234567Z"), skippingRefused: &outputs)) { error in
            XCTAssertEqual(error as? FrameError, .unknownCode(0x5A))
        }
        XCTAssertEqual(decoder.failure, .unknownCode(0x5A))
        XCTAssertThrowsError(try decoder.push(bytes("T0000000"), skippingRefused: &outputs))

        decoder.reset()
        try decoder.push(bytes("I0000005ab"), skippingRefused: &outputs)
        XCTAssertEqual(decoder.bytesToSkip, 3)
        decoder.reset()
        XCTAssertEqual(decoder.bytesToSkip, 0)
        try decoder.push(bytes("T0000001b"), skippingRefused: &outputs)
        XCTAssertEqual(outputs, [.refused(.bodyTooLarge(size: 5, limit: 4)), .frame(.text("b"))])
    }

    /// The strict pushes do not skip: a refusal stops them like any bad header.
    func testPlainPushStillStopsAtARefusal() {
        var decoder = FrameDecoder(maximumBodySize: 4)
        var frames: [Frame] = []
        XCTAssertThrowsError(try decoder.push(bytes("T0000001aT0000009"), into: &frames))
        XCTAssertEqual(frames, [.text("a")])
        XCTAssertEqual(decoder.failure, .bodyTooLarge(size: 9, limit: 4))
        XCTAssertEqual(decoder.bytesToSkip, 0)
    }
}
