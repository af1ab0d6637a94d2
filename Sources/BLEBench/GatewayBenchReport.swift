#if canImport(Glibc)
import Glibc
#endif
import BLEMQTT
import Foundation

/// What `ble-bench gateway` prints: the set-up, each pass's table, and the CPU per message of
/// both passes side by side (docs/PERFORMANCE.md#mqtt-gateway).
struct GatewayBenchReport {
    let options: GatewayBenchOptions
    let broker: MQTTBrokerURL
    /// The broker's version and PID when the bench started it.
    let mosquitto: (version: String, pid: Int32)?
    /// The radio-only passes: before the gateways and after them.
    var radioOnly: [GatewayBenchPasses.RadioOnly] = []
    var gateways: GatewayBenchPasses.Gateways?

    func printHeader() {
        let changing = (options.advertisers + GatewayBenchOptions.changingEvery - 1) / GatewayBenchOptions.changingEvery
        print("ble-bench gateway: \(options.gateways) gateway(s), each on a virtual radio of its own (real time, no air-time model) with "
              + "\(options.advertisers) advertisers (legacy, every \(milliseconds(options.advertisingInterval)) ms, half connectable, "
              + "\(changing) changing their data every second) and \(options.notifiers) notifiers at \(number(options.rate)) Hz "
              + "(\(NotificationLedger.valueLength)-byte values); active scan with duplicates")
        if let m = mosquitto {
            print("broker: \(m.version), started by the bench on \(broker) (PID \(m.pid))")
        } else {
            print("broker: \(broker) (given with --broker; its CPU time is not measured)")
        }
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print("each pass: 1 s warm-up, \(number(options.seconds)) s measured, 1 s drain; "
              + "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(String(format: "%.2f", load[0])) at start")
    }

    func printRadioOnly(_ index: Int) {
        guard radioOnly.indices.contains(index) else { return }
        let r = radioOnly[index]
        print("")
        print(index == 0 ? "pass 1, radio only: a plain Central on each radio (active scan with duplicates, subscribed to its notifiers), no MQTT"
                         : "pass 3, radio only again (fresh worlds, as pass 1)")
        print(pad("radio", 7) + pad("reports/s", 11) + pad("values/s", 10) + pad("sent", 7) + pad("missing", 9)
              + "latency notifier → central, ms: p50 / p95 / p99 / max")
        for g in 0..<options.gateways {
            print(pad("\(g + 1)", 7) + pad(rate(r.reports[g], r.window.wall), 11) + pad(rate(r.values[g], r.window.wall), 10)
                  + pad("\(r.sent[g])", 7) + pad("\(r.sent[g] - r.latencies[g].count)", 9) + percentiles(r.latencies[g]))
        }
        let all = r.latencies.flatMap { $0 }
        print(pad("all", 7) + pad(rate(r.reports.reduce(0, +), r.window.wall), 11) + pad(rate(r.values.reduce(0, +), r.window.wall), 10)
              + pad("\(r.sent.reduce(0, +))", 7) + pad("\(r.sent.reduce(0, +) - all.count)", 9) + percentiles(all))
        print(String(format: "  process CPU: %.2f s in %.2f s (%.0f%% of one core)", r.window.cpu, r.window.wall, 100 * r.window.cpu / r.window.wall))
        reportRefusals(r.worlds)
    }

    func printGateways() {
        guard let r = gateways else { return }
        print("")
        print("pass 2, gateways: a Gateway on each radio, subscribed to its notifiers by commands on its cmd topic; "
              + "one subscriber on \(GatewayBenchPasses(options: options, broker: broker).prefix)/+/dev/# and …/adv/#")
        let before = r.beforeWindow.reduce(0) { $0 + $1.advertisements }
        print(String(format: "  set-up %.1f s (worlds, gateways, subscriptions); %d advertisement messages before the window "
                     + "(each device's first)", r.setupSeconds, before))
        print(pad("gateway", 8) + pad("dev msg/s", 10) + pad("adv msg/s", 10) + pad("sent", 7) + pad("missing", 9)
              + pad("dropped n/a/c", 15) + pad("superseded", 11) + pad("reports/s", 11)
              + "latency notifier → subscriber, ms: p50 / p95 / p99 / max")
        let wall = r.window.wall
        for (g, c) in r.counts.enumerated() {
            let (s, e) = r.statistics.indices.contains(g) ? r.statistics[g] : (nil, nil)
            let dropped = e.map { "\($0.droppedNotifications)/\($0.droppedAdvertisements)/\($0.droppedControl)" } ?? "?"
            let superseded = e.map { "\($0.superseded)" } ?? "?"
            let reports = s.flatMap { s in e.map { rate($0.reports - s.reports, wall) } } ?? "?"
            print(pad("gw\(g + 1)", 8) + pad(rate(c.values, wall), 10) + pad(rate(c.advertisements, wall), 10) + pad("\(r.sent[g])", 7)
                  + pad("\(r.sent[g] - r.latencies[g].count)", 9) + pad(dropped, 15) + pad(superseded, 11) + pad(reports, 11)
                  + percentiles(r.latencies[g]))
        }
        let values = r.counts.reduce(0) { $0 + $1.values }, adverts = r.counts.reduce(0) { $0 + $1.advertisements }
        let ends = r.statistics.map(\.end)
        let dropped = "\(ends.reduce(0) { $0 + $1.droppedNotifications })/\(ends.reduce(0) { $0 + $1.droppedAdvertisements })/\(ends.reduce(0) { $0 + $1.droppedControl })"
        let reports = r.statistics.reduce(0) { $0 + $1.end.reports - $1.start.reports }
        let all = r.latencies.flatMap { $0 }
        print(pad("all", 8) + pad(rate(values, wall), 10) + pad(rate(adverts, wall), 10) + pad("\(r.sent.reduce(0, +))", 7)
              + pad("\(r.sent.reduce(0, +) - all.count)", 9) + pad(dropped, 15) + pad("\(ends.reduce(0) { $0 + $1.superseded })", 11)
              + pad(rate(reports, wall), 11) + percentiles(all))
        let unmatched = r.counts.reduce(0) { $0 + $1.unmatched }
        let reconnections = ends.reduce(0) { $0 + $1.reconnections }
        if unmatched > 0 || r.duplicates > 0 || reconnections > 0 {
            print("  \(unmatched) values not matched to a notification sent, \(r.duplicates) duplicates, \(reconnections) broker reconnections")
        }
        reportRefusals(r.worlds)
    }

    func printCPU() {
        guard let g = gateways, !radioOnly.isEmpty else { return }
        let messages = g.counts.reduce(0) { $0 + $1.values + $1.advertisements }
        guard messages > 0 else {
            print("no message reached the subscriber in the window: no CPU per message")
            return
        }
        func perMessage(_ seconds: Double) -> String { String(format: "%.1f µs per message", seconds / Double(messages) * 1e6) }
        func share(_ w: GatewayBenchPasses.Window, _ cpu: Double) -> String { String(format: "%.0f%% of one core", 100 * cpu / w.wall) }
        print("")
        print("CPU per message: \(messages) messages reached the subscriber in the gateway pass's window (values and advertisements)")
        print(String(format: "  gateway pass, this process:      %6.2f s CPU", g.window.cpu) + " (\(share(g.window, g.window.cpu))) = \(perMessage(g.window.cpu))"
              + " (everything in this process: the virtual radios, the advertisers' and notifiers' hosts, the gateways' centrals, the gateways, their MQTT clients, the subscriber)")
        // Each radio-only pass's CPU scaled to the gateway pass's window, and their mean.
        let scaled = radioOnly.map { $0.window.cpu * g.window.wall / $0.window.wall }
        let radio = scaled.reduce(0, +) / Double(scaled.count)
        let each = scaled.map { String(format: "%.2f", $0) }.joined(separator: " and ")
        print(String(format: "  radio-only passes, this process: %6.2f s CPU", radio) + " (mean of \(each)) = \(perMessage(radio))"
              + " (the same radios and hosts, a plain central scanning and subscribed in place of each gateway)")
        let difference = g.window.cpu - radio
        print(String(format: "  difference:                      %6.2f s CPU", difference) + " = \(perMessage(difference))"
              + " (the gateways' own work, their MQTT clients and the subscriber)")
        let spread = (scaled.max() ?? 0) - (scaled.min() ?? 0)
        if abs(difference) <= spread {
            print(String(format: "    within the %.2f s the two radio-only passes differ by: the radios' cost hides the gateways' here; ", spread)
                  + "fewer advertisers (--advertisers 20) and more values (--notifiers 16 --rate 50) measure it")
        }
        if let m = g.window.brokerCPU {
            print(String(format: "  mosquitto:                       %6.2f s CPU", m) + " (\(share(g.window, m))) = \(perMessage(m))"
                  + " (each message taken from a gateway and sent to the subscriber, QoS 1 both ways)")
        }
    }

    private func reportRefusals(_ worlds: [GatewayBenchWorld.Counts]) {
        let failed = worlds.reduce(0) { $0 + $1.advertisingChangesFailed }
        let changes = worlds.reduce(0) { $0 + $1.advertisingChanges }
        print("  advertising data changed \(changes) times (\(failed) failed); notifications the notifiers' hosts refused: "
              + "\(worlds.reduce(0) { $0 + $1.notificationsRefused }) (of \(worlds.reduce(0) { $0 + $1.notificationsQueued + $1.notificationsRefused }))")
    }

    private func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%.1f", Double(count) / seconds) }

    private func number(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }

    private func milliseconds(_ d: Duration) -> Int { Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000) }

    /// p50 / p95 / p99 / max of `seconds`, in milliseconds.
    private func percentiles(_ seconds: [Double]) -> String {
        guard !seconds.isEmpty else { return "-" }
        let sorted = seconds.sorted()
        func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))] * 1000 }
        return String(format: "%.2f / %.2f / %.2f / %.2f", at(0.5), at(0.95), at(0.99), sorted[sorted.count - 1] * 1000)
    }
}
