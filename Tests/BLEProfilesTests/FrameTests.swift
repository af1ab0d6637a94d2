import XCTest
import BLEWire
@testable import BLEProfiles

/// Encoding S1 frames and cutting them into writes (docs/SYSTEMS.md S1).
final class FrameTests: XCTestCase {
    func testGoldenBytes() throws {
        XCTAssertEqual(try Frame.text("hi").encoded(), Array("T0000002hi".utf8))
        XCTAssertEqual(try Frame.notify.encoded(), Array("N0000000".utf8))
        XCTAssertEqual(try Frame.url("http://a/b.png").encoded(), Array("U0000014http://a/b.png".utf8))
        XCTAssertEqual(try Frame.image([0x89, 0x50, 0x00]).encoded(), Array("I0000003".utf8) + [0x89, 0x50, 0x00])
        // UTF-8: the size counts bytes, not characters.
        XCTAssertEqual(try Frame.text("é").encoded(), Array("T0000002".utf8) + [0xC3, 0xA9])
    }

    func testSizeFieldUsesAllSevenDigits() throws {
        let body = [UInt8](repeating: 7, count: 1_234_567)
        let bytes = try Frame.image(body).encoded()
        XCTAssertEqual(Array(bytes.prefix(8)), Array("I1234567".utf8))
        XCTAssertEqual(bytes.count, 8 + body.count)
    }

    func testLargestEncodableBodyAndOneMore() throws {
        var frame = Frame.image([UInt8](repeating: 0, count: Frame.maximumEncodableBodySize))
        XCTAssertEqual(Array(try frame.encoded().prefix(8)), Array("I9999999".utf8))
        frame.body.append(0)
        XCTAssertThrowsError(try frame.encoded()) { error in
            XCTAssertEqual(error as? FrameError, .bodyTooLongToEncode(10_000_000))
        }
        XCTAssertThrowsError(try frame.chunks(maximumLength: 20))
    }

    func testForMessagePicksURLOrText() {
        XCTAssertEqual(Frame.forMessage("hello").code, .text)
        XCTAssertEqual(Frame.forMessage("http://example.com/a.png"), .url("http://example.com/a.png"))
        XCTAssertEqual(Frame.forMessage("https://example.com/a.png").code, .url)
        XCTAssertEqual(Frame.forMessage("file:///tmp/a.png").code, .url)
        // The article's rule is a plain prefix test: case and leading spaces matter.
        XCTAssertEqual(Frame.forMessage(" http://x").code, .text)
        XCTAssertEqual(Frame.forMessage("HTTP://x").code, .text)
        XCTAssertEqual(Frame.forMessage("file:/x").code, .text)
        XCTAssertEqual(Frame.forMessage("").code, .text)
    }

    func testTextDecodesUTF8OrGivesNil() {
        XCTAssertEqual(Frame.text("こんにちは").text, "こんにちは")
        XCTAssertEqual(Frame.notify.text, "")
        XCTAssertNil(Frame.image([0xFF, 0xD8]).text)
    }

    func testCodesAreTheirASCIILetters() {
        XCTAssertEqual(FrameCode.allCases.map(\.description), ["N", "T", "U", "I"])
        XCTAssertEqual(FrameCode.allCases.map(\.rawValue), Array("NTUI".utf8))
    }

    func testChunksCoverTheStreamInOrder() throws {
        let stream = try Frame.text(String(repeating: "abcdefghij", count: 5)).encoded() // 58 bytes
        let pieces = Frame.chunks(of: stream, maximumLength: 20)
        XCTAssertEqual(pieces.map(\.count), [20, 20, 18])
        XCTAssertEqual(Array(pieces.joined()), stream)
        XCTAssertEqual(Frame.chunks(of: Array(stream.prefix(40)), maximumLength: 20).map(\.count), [20, 20])
        XCTAssertEqual(Frame.chunks(of: stream, maximumLength: 1000), [stream])
        XCTAssertEqual(try Frame.text("hi").chunks(maximumLength: 4), [Array("T000".utf8), Array("0002".utf8), Array("hi".utf8)])
    }

    func testChunksWithNoRoomStillSendEveryByte() {
        let stream = Array("N0000000".utf8)
        XCTAssertEqual(Frame.chunks(of: stream, maximumLength: 0), stream.map { [$0] })
        XCTAssertEqual(Frame.chunks(of: stream, maximumLength: -5), stream.map { [$0] })
        XCTAssertEqual(Frame.chunks(of: stream, maximumLength: Int.min), stream.map { [$0] })
        XCTAssertEqual(Frame.chunks(of: [], maximumLength: 20), [])
        XCTAssertEqual(Frame.chunks(of: stream, maximumLength: Int.max), [stream])
    }

    func testErrorMessagesSayWhatIsWrong() {
        XCTAssertEqual(FrameError.unknownCode(0x41).description,
                       "framed stream: unknown frame code 0x41 'A' (expected N, T, U or I); the stream is out of sync")
        XCTAssertTrue(FrameError.unknownCode(0x07).description.contains("code 0x07 ("))
        XCTAssertEqual(FrameError.invalidSize(Array("00x0\n00".utf8)).description,
                       "framed stream: size field \"00x0.00\" (303078300a3030) is not 7 ASCII decimal digits")
        XCTAssertEqual(FrameError.bodyTooLarge(size: 2_000_000, limit: 1_000_000).description,
                       "framed stream: frame announces a body of 2000000 bytes, more than the limit of 1000000")
        XCTAssertTrue(FrameError.bodyTooLongToEncode(10_000_000).description.contains("9999999"))
    }

    func testEchoProfile() {
        XCTAssertEqual(EchoProfile.service.description, "54f06857-695e-47e4-aea8-c78184ad6c75")
        XCTAssertEqual(EchoProfile.stream.description, "30a5f1bb-61dc-45f0-9c52-2218d080fa77")
        XCTAssertEqual(EchoProfile.reply(to: "hello"), "You said: hello")
        XCTAssertEqual(EchoProfile.reply(to: ""), "You said: ")
    }
}
