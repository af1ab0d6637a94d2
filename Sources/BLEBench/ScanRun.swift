import BLE
import BLEHCI
import Synchronization

/// `ble-bench scan`: advertising reports through the whole host, from the HCI event bytes a
/// controller sends to a consumer of `Central.scan`, with ageing on.
///
/// A `BenchController` feeds the rounds of `AdvertisingPopulation` to an unmodified `Central`
/// in batches of at most `batchReports` reports, each closed by a marker beacon. The consumer,
/// an ordinary `for try await` over `central.scan(active: true)`, counts what it gets and
/// injects the next batch when it sees the marker: every report of a batch has then been
/// through the host and the scan's buffer (4096 devices, `bufferingNewest`), so nothing is
/// lost to the buffering policy and the run is deterministic. Time is a `ManualClock` moved on
/// by one second per round (each device advertises once a second), so the scanner's ageing
/// pass runs as it does on a long scan.
struct ScanRun: Sendable {
    /// Reports to feed (at least; the run ends at the first batch boundary past it).
    var count = 300_000
    /// Most reports a controller packs in one event (legacy Num_Reports allows 25).
    var reportsPerEvent = 25
    /// Reports per batch: below the scan stream's 4096-device buffer.
    var batchReports = 2_000

    struct Result: Sendable {
        var reports = 0, events = 0, malformed = 0
        /// Devices the consumer got (markers not counted), and how many different ones.
        var delivered = 0, distinct = 0
        var cpuSeconds = 0.0
        /// What one round holds (both rounds hold the same).
        var round = AdvertisingPopulation.Round()
    }

    func run() async throws -> Result {
        let rounds = [AdvertisingPopulation.round(variant: 0, reportsPerEvent: reportsPerEvent),
                      AdvertisingPopulation.round(variant: 1, reportsPerEvent: reportsPerEvent)]
        let clock = ManualClock()
        let feeder = Feeder(rounds: rounds, target: count, batchReports: batchReports, clock: clock)
        let controller = BenchController(onScanEnabled: { feeder.next() })
        feeder.attach(controller)
        let central = try await Central.open(transport: controller, clock: clock)
        let cpuBefore = cpuSeconds()
        var delivered = 0
        var heard = [Bool](repeating: false, count: AdvertisingPopulation.deviceCount)
        for try await device in central.scan(filter: ScanFilter(), active: true) {
            if device.address == AdvertisingPopulation.markerAddress {
                if !feeder.next() { break }
            } else {
                delivered += 1
                let index = Int(device.address.address.rawValue & 0xFFFF)
                if index < heard.count { heard[index] = true }
            }
        }

        var result = feeder.result
        result.round = rounds[0]
        result.cpuSeconds = cpuSeconds() - cpuBefore
        result.delivered = delivered
        result.distinct = heard.reduce(0) { $0 + ($1 ? 1 : 0) }
        await central.close()
        return result
    }

    /// Hands out the batches: each a run of whole events from the current round, then the marker.
    private final class Feeder: Sendable {
        private struct State {
            var round = 0
            var frame = 0
            var batch = 0
            var result = Result()
            var controller: BenchController?
        }
        private let rounds: [AdvertisingPopulation.Round]
        private let target: Int
        private let batchReports: Int
        private let clock: ManualClock
        private let markers = [AdvertisingPopulation.marker(parity: 0), AdvertisingPopulation.marker(parity: 1)]
        private let state = Mutex(State())

        init(rounds: [AdvertisingPopulation.Round], target: Int, batchReports: Int, clock: ManualClock) {
            self.rounds = rounds
            self.target = target
            self.batchReports = batchReports
            self.clock = clock
        }

        var result: Result { state.withLock { $0.result } }

        /// Where the batches go (set once, before the host turns scanning on).
        func attach(_ controller: BenchController) {
            state.withLock { $0.controller = controller }
        }

        /// Injects the next batch; false when `target` reports have been fed.
        @discardableResult
        func next() -> Bool {
            state.withLock { s -> Bool in
                guard let controller = s.controller, s.result.reports < target else { return false }
                let round = rounds[s.round % rounds.count]
                let start = s.frame
                var reports = 0
                while s.frame < round.frames.count && reports < batchReports {
                    let n = round.reportCounts[s.frame]
                    if n == 0 { s.result.malformed += 1 }
                    reports += n
                    s.frame += 1
                }
                s.result.reports += reports
                s.result.events += s.frame - start
                // One second per round, spread over its batches.
                clock.advance(by: .seconds(1) * (Double(reports) / Double(round.reports)))
                controller.inject(round.frames[start..<s.frame])
                controller.inject([markers[s.batch % 2]][...])
                s.batch += 1
                if s.frame == round.frames.count {
                    s.round += 1
                    s.frame = 0
                }
                return true
            }
        }
    }
}
