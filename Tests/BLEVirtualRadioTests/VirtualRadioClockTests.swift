import BLERuntime
import BLE
import BLEHCI
import BLETransport
import BLEVirtualRadio
import BLEWire
import BLETestSupport
import XCTest

/// The radio's time is injected: with a manual clock, advertising events happen only when the
/// clock moves, at the advertising interval.
final class BLEClockTests: XCTestCase {
    /// A bare-bones host: sends commands and reads what the controller sends back.
    final class RawHost: @unchecked Sendable {
        let transport: any HCITransport
        var iterator: AsyncThrowingStream<H4Frame, any Error>.AsyncIterator

        init(_ transport: any HCITransport) {
            self.transport = transport
            self.iterator = transport.incoming.makeAsyncIterator()
        }

        func next() async throws -> HCIEvent? {
            guard let frame = try await iterator.next() else { return nil }
            return try HCIEvent.decode(frame.payload)
        }

        func command(_ c: HCICommand) async throws {
            try await transport.send(c.h4Frame)
            while let e = try await next() {
                if case let .commandComplete(_, opcode, params) = e, opcode == c.opcode {
                    XCTAssertEqual(params.first, 0, "\(c.opcode)")
                    return
                }
            }
        }
    }

    func testAdvertisingEventsFollowTheInjectedClock() async throws {
        let clock = ManualClock()
        let radio = VirtualRadio(clock: clock)
        let advertiser = RawHost(await radio.makeController(address: BDAddress(rawValue: 0xA1)))
        let scanner = RawHost(await radio.makeController(address: BDAddress(rawValue: 0xB2)))
        for h in [advertiser, scanner] {
            try await h.command(.setEventMask(EventMask.default))
            try await h.command(.leSetEventMask(LEEventMask.default))
        }
        try await scanner.command(.leSetScanEnable(enable: true))
        try await advertiser.command(.leSetAdvertisingParameters(intervalMin: 1600, intervalMax: 1600, type: .nonConnectableUndirected))
        try await advertiser.command(.leSetAdvertisingData([2, 1, 4]))
        try await advertiser.command(.leSetAdvertisingEnable(enable: true))

        // The first advertising event follows the enable at once; the next one waits for 1 s.
        guard case let .le(.advertisingReport(first))? = try await scanner.next() else { return XCTFail("no report") }
        XCTAssertEqual(first.first?.legacyEventType, .advNonconnInd)
        XCTAssertEqual(first.first?.data, [2, 1, 4])
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(1) }
        clock.advance(by: .seconds(1))
        guard case .le(.advertisingReport)? = try await scanner.next() else { return XCTFail("no second report") }
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(2) }
        await radio.shutdown()
    }
}
