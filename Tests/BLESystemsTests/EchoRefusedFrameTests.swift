import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEWire
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// The echo server after a frame it refuses for its header (docs/SYSTEMS.md S1: reject, do not crash):
/// one error answer, the refused body skipped however many writes it spans, and the stream
/// still in step for the next frame. Raw writes need the `Central` API directly.
final class EchoRefusedFrameTests: XCTestCase {
    /// Writes `writes` one by one on a fresh link to `server` and collects the answers until
    /// one is `last` (or 30 s of virtual time pass).
    static func answers(to writes: [[UInt8]], until last: Frame, in world: VirtualWorld,
                        server: ServedProfile<EchoServeProfile>) async throws -> [Frame] {
        let (central, _) = try await world.addCentral()
        let device = try await findAdvertiser(of: EchoProfile.service, target: nil, using: central, timeout: .seconds(10))
        let peripheral = try await central.connect(device.address)
        try await exchangeMTU(247, on: peripheral)
        let stream = try await discover(EchoProfile.service, on: peripheral).characteristic(EchoProfile.stream)
        let notifications = await peripheral.notifications(for: stream)
        try await peripheral.setNotifyValue(true, for: stream)
        for write in writes { try await peripheral.writeValue(write, for: stream) }
        let giveUp = Task(executorPreference: world.clock.taskExecutor) {
            try await world.clock.sleep(for: .seconds(30))
            try await peripheral.disconnect()
        }
        var decoder = FrameDecoder()
        var answers: [Frame] = []
        for await value in notifications {
            answers += try decoder.push(value)
            if answers.last == last { break }
        }
        giveUp.cancel()
        if peripheral.state == .connected { try await peripheral.disconnect() }
        await central.close()
        return answers
    }

    /// An `I` frame over the limit whose 150-byte body spans four writes and holds what looks
    /// like a `T` and a `U` frame: one error, no echo, no fetch, and the `T` after it answered.
    func testTheBodyOfAFrameRefusedForItsSizeIsSkippedAcrossWrites() async throws {
        let inside = Array("T0000005hello".utf8) + Array("U0000016file:///etc/hosts".utf8)
        let filler = [UInt8](repeating: 0x4E, count: 150 - 12 - inside.count)
        let writes = [Array("I0000150".utf8) + [UInt8](repeating: 0xFF, count: 12),
                      Array(inside.prefix(13)), Array(inside.dropFirst(13)), filler, Array("T0000002ok".utf8)]
        let (answers, frames, fetches) = try await VirtualWorld.run { world in
            var profile = EchoServeProfile()
            profile.maximumBodySize = 100
            let server = try await world.serve(profile, name: "EchoServer")
            let answers = try await Self.answers(to: writes, until: .text("You said: ok"), in: world, server: server)
            await server.stop()
            return (answers, server.events("frame").count, server.events("fetch").count)
        }
        XCTAssertEqual(answers, [.text("error: framed stream: frame announces a body of 150 bytes, more than the limit of 100"),
                                 .text("You said: ok")])
        XCTAssertEqual(frames, 1, "only the T after the refused frame is a frame")
        XCTAssertEqual(fetches, 0, "nothing inside the refused body is fetched")
    }

    /// An `N` frame that announces a body is refused the same way, within one write.
    func testAnNFrameWithABodyIsAnsweredWithAnErrorAndSkipped() async throws {
        let answers = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let answers = try await Self.answers(to: [Array("N0000011T0000002no!T0000002ok".utf8)],
                                                 until: .text("You said: ok"), in: world, server: server)
            await server.stop()
            return answers
        }
        XCTAssertEqual(answers, [.text("error: framed stream: an N frame announces a body of 11 bytes; N frames have none"),
                                 .text("You said: ok")])
    }
}
