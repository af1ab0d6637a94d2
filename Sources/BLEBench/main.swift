#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEHCI
import BLEVirtualRadio
import Foundation
import Synchronization

/// `ble-bench`: notification throughput Swift → Swift on the virtual radio.
///
///   ble-bench                 both parts below
///   ble-bench air             with the air-time model, in virtual time, against the theoretical
///                             figure for the same PHY, interval and data length (AirTime.swift)
///   ble-bench raw [--count N] [--acl-buffer 27|251] [--mode notification|write-without-response|indication] [--real-time]
///                             without the air-time model: the host's own cost, as notifications
///                             per CPU-second (getrusage); under valgrind's callgrind,
///                             scripts/bench.sh turns two runs into instructions per notification.
///                             The hosts run in a `VirtualTime` world, as the tests run them (one
///                             thread, every actor hop a queued job; callgrind's count is the same
///                             every run); --real-time runs them in real time on Swift's default
///                             executors instead, as an application does (hops run inline; the
///                             count varies with how the threads interleave).
///                             --acl-buffer sets both controllers' LE ACL buffer length (default
///                             251; 27 is what controllers without LE Data Length Extension give);
///                             --mode sends the values as indications, or as writes without
///                             response from the central, instead of notifications
///   ble-bench scan [--count N] [--reports-per-event K]
///                             advertising reports from 10,000 devices through the whole host to a
///                             `Central.scan` consumer (ScanRun.swift): reports per CPU-second;
///                             under callgrind, instructions per report
///   ble-bench scan-events --out FILE [--reports-per-event K]
///                             writes the HCI events `scan` feeds (ScanEventsDump.swift), for
///                             Bumble's equivalent in scripts/bench.sh --compare
///   ble-bench framing [--count BYTES]
///                             the S1 framed-stream decoder over BYTES (9 MB) and 10 × BYTES of
///                             notifications (FramingRun.swift): bytes per CPU-second and the ratio
///                             of the two times, which is 10 when the decoder is linear
///   ble-bench gateway [--gateways N] [--advertisers N] [--notifiers N] [--rate HZ] [--seconds S]
///                     [--adv-interval MS] [--broker mqtt://HOST:PORT]
///                             several `Gateway`s, each on a virtual radio of its own with N
///                             advertisers and N notifiers, against one broker (a `mosquitto` it
///                             starts itself without --broker; BLE_MOSQUITTO names its path):
///                             messages per second per gateway, CPU per message beside a radio-only
///                             pass, end-to-end latency notifier → MQTT subscriber (GatewayBench.swift)
let arguments = Array(CommandLine.arguments.dropFirst())
let part = arguments.first ?? "all"
func option(_ name: String) -> Int? {
    arguments.firstIndex(of: name).flatMap { i in i + 1 < arguments.count ? Int(arguments[i + 1]) : nil }
}
let count: Int? = option("--count")
let aclBuffer: UInt16? = option("--acl-buffer").flatMap { UInt16(exactly: $0) }
if arguments.contains("--acl-buffer"), aclBuffer.map({ $0 < 27 || $0 > 251 }) ?? true {
    FileHandle.standardError.write(Data("ble-bench: --acl-buffer takes a length from 27 to 251\n".utf8))
    exit(2)
}
/// `raw --real-time`: the hosts on Swift's default executors in real time, as an application
/// runs them, instead of in a `VirtualTime` world.
let realTime = arguments.contains("--real-time")
let modeName = arguments.firstIndex(of: "--mode").flatMap { i in i + 1 < arguments.count ? arguments[i + 1] : nil }
let mode = modeName.flatMap(NotificationRun.Mode.init(rawValue:)) ?? .notification
if arguments.contains("--mode"), modeName.flatMap(NotificationRun.Mode.init(rawValue:)) == nil {
    let names = NotificationRun.Mode.allCases.map(\.rawValue).joined(separator: ", ")
    FileHandle.standardError.write(Data("ble-bench: --mode takes one of \(names)\n".utf8))
    exit(2)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(usage.ru_utime) + s(usage.ru_stime)
}

func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }

func airTimeTable(count: Int?) async throws {
    print("notification throughput, Swift peripheral → Swift central, virtual radio with the air-time model")
    print(pad("PHY", 8) + pad("LL payload", 12) + pad("interval", 10) + pad("theory", 14) + pad("measured", 14) + "measured/theory")
    let cases: [(LEPHY, Int, UInt16)] = [(.le2M, 251, 6), (.le1M, 251, 6), (.le1M, 27, 6), (.le2M, 251, 24)]
    for (phy, length, units) in cases {
        var run = NotificationRun()
        run.phy = phy
        run.dataLength = length
        run.intervalUnits = units
        run.count = count ?? 1_000
        let result = try await run.run()
        let theory = AirTime.notificationThroughput(payload: length, phy: phy, interval: run.interval)
        let ratio = result.bitsPerSecond / theory
        print(pad(phy.description, 8) + pad("\(length) B", 12) + pad(String(format: "%.1f ms", run.interval.seconds * 1000), 10)
              + pad(String(format: "%.3f Mbit/s", theory / 1e6), 14) + pad(String(format: "%.3f Mbit/s", result.bitsPerSecond / 1e6), 14)
              + String(format: "%.3f", ratio))
    }
}

func rawCost(count: Int?, aclBuffer: UInt16?, mode: NotificationRun.Mode) async throws {
    var run = NotificationRun()
    run.mode = mode
    run.airTimeModel = false
    run.aclBufferLength = aclBuffer ?? 251
    run.count = count ?? 20_000
    run.size = 244
    run.executors = realTime ? .application : .virtualTime
    // Warm up (first-use costs: metadata, allocations), then measure.
    var warm = run
    warm.count = 200
    _ = try await warm.run()
    let before = cpuSeconds()
    let result = try await run.run()
    let cpu = cpuSeconds() - before
    let what = mode.plural
    print("raw host cost, no air-time model: \(run.count) \(what) of \(run.valueSize) B, \(run.aclBufferLength)-byte ACL buffers, Swift → Swift (both hosts in this process, \(result.executors.description))")
    print(String(format: "  %.3f s CPU: %.0f \(what) per CPU-second", cpu, Double(run.count) / cpu))
}

func scanCost(count: Int?, reportsPerEvent: Int?) async throws {
    var run = ScanRun()
    if let count { run.count = count }
    if let reportsPerEvent { run.reportsPerEvent = max(1, min(25, reportsPerEvent)) }
    let r = try await run.run()
    let round = r.round
    print("scan: \(r.reports) advertising reports in \(r.events) HCI events (at most \(run.reportsPerEvent) per event), "
          + "\(r.malformed) malformed events rejected, \(r.delivered) devices delivered to the consumer (\(r.distinct) different)")
    print("  each round: \(AdvertisingPopulation.deviceCount) devices, \(round.legacy) legacy + \(round.extended) extended reports "
          + "(\(round.scanResponses) scan responses), active scan, duplicates filtered, ageing on")
    print(String(format: "  %.3f s CPU: %.0f reports per CPU-second", r.cpuSeconds, Double(r.reports) / r.cpuSeconds))
}

/// Runs the parts on a detached task and waits on a semaphore rather than using an async main:
/// valgrind 3.19 (Debian 12) crashes when the main thread parks in `dispatch_main`, which an
/// async main does.
let finished = DispatchSemaphore(value: 0)
let failure = Mutex<String?>(nil)
Task.detached {
    do {
        switch part {
        case "air": try await airTimeTable(count: count)
        case "raw": try await rawCost(count: count, aclBuffer: aclBuffer, mode: mode)
        case "scan": try await scanCost(count: count, reportsPerEvent: option("--reports-per-event"))
        case "framing": try framingCost(bytes: count)
        case "gateway": try await gatewayBench(Array(arguments.dropFirst()))
        case "scan-events":
            try dumpScanEvents(to: arguments.firstIndex(of: "--out").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil },
                               reportsPerEvent: option("--reports-per-event"))
        default:
            try await airTimeTable(count: count)
            print("")
            try await rawCost(count: count, aclBuffer: aclBuffer, mode: mode)
        }
    } catch {
        failure.withLock { $0 = "\(error)" }
    }
    finished.signal()
}
finished.wait()
if let message = failure.withLock({ $0 }) {
    FileHandle.standardError.write(Data("ble-bench: \(message)\n".utf8))
    exit(1)
}
exit(0)
