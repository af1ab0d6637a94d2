import BLE
import BLEHost
import BLEProfiles
import BLEWire

/// The charting central's output: plain lines, JSON objects, the live chart screen and the
/// session's SVG. Pure functions and values, for tests.
enum AccelerometerLines {
    /// `{"x":0.1,"y":-0.2,"z":0.98}`: each Float32 as the Double it converts to exactly.
    static func json(_ s: AccelerometerSample) -> String {
        JSON.object([("x", .number(Double(s.x))), ("y", .number(Double(s.y))), ("z", .number(Double(s.z)))]).text
    }

    /// "x  0.123  y -0.456  z  0.987 g"
    static func sample(_ s: AccelerometerSample) -> String {
        "x " + NumberText.right(NumberText.fixed(Double(s.x), 3), 7) + "  y " + NumberText.right(NumberText.fixed(Double(s.y), 3), 7)
            + "  z " + NumberText.right(NumberText.fixed(Double(s.z), 3), 7) + " g"
    }

    static func device(_ d: ScannedDevice) -> String {
        "\(d.advertisement.localName ?? "unnamed device") \(d.address)"
    }

    /// The plain lines for one event.
    static func lines(for event: AccelerometerCentralEvent) -> [String] {
        switch event {
        case let .scanning(duration):
            return ["scanning    \(NumberText.seconds(duration)) for devices whose name contains \"ble\""]
        case let .found(devices):
            return ["found       \(devices.count) device(s)"] + AccelerometerDeviceChoice.menu(devices)
        case let .chose(d):
            return ["chose       \(device(d))"]
        case let .connecting(address):
            return ["connecting  \(address)"]
        case let .connected(address, mtu):
            return ["connected   \(address), ATT MTU \(mtu)"]
        case .subscribed:
            return ["subscribed  0012 (x, y, z as Float32)"]
        case let .sample(s, _):
            return ["sample      " + sample(s)]
        case let .malformed(value, error):
            return ["malformed   \(value.hexString): \(error)"]
        }
    }
}

/// Every sample of a session with its arrival time: the live chart's data and the SVG's.
struct AccelerometerRecording: Sendable {
    private(set) var times: [Duration] = []
    private(set) var samples: [AccelerometerSample] = []
    private(set) var device: String?

    mutating func record(_ event: AccelerometerCentralEvent) {
        switch event {
        case let .sample(s, at):
            times.append(at)
            samples.append(s)
        case let .chose(d):
            device = AccelerometerLines.device(d)
        case let .connected(address, _):
            if device == nil { device = "\(address)" }
        default:
            break
        }
    }

    var series: [(mark: Character, color: Int, svgColor: String, name: String, values: [Double])] {
        [("x", 31, "#d62728", "x", samples.map { Double($0.x) }),
         ("y", 32, "#2ca02c", "y", samples.map { Double($0.y) }),
         ("z", 34, "#1f77b4", "z", samples.map { Double($0.z) })]
    }

    /// The live screen: a header, the three-line chart and its legend.
    func screen(width: Int, height: Int, colors: Bool) -> [String] {
        var out = ["\(device ?? "accelerometer")  —  \(samples.count) sample\(samples.count == 1 ? "" : "s")"
                   + (samples.last.map { "  latest " + AccelerometerLines.sample($0) } ?? ""), ""]
        out += TerminalChart.render(series.map { TerminalChart.Series(mark: $0.mark, color: $0.color, values: $0.values) },
                                    width: width, height: max(4, height - 6), colors: colors)
        let legend = series.map { s in colors ? "\u{1B}[\(s.color)m\(s.mark)\u{1B}[0m \(s.name)" : "\(s.mark) \(s.name)" }
        out += ["  " + legend.joined(separator: "   ") + "   (g; newest on the right)", "Ctrl-C to stop"]
        return out
    }

    /// The whole session as an SVG chart, time in seconds from the first sample.
    func svg() -> String {
        let start = times.first ?? .zero
        let seconds = times.map { t -> Double in
            let (s, atto) = (t - start).components
            return Double(s) + Double(atto) / 1e18
        }
        let chart = SVGChart(title: "Accelerometer \(device ?? "")".trimmingSpaces + " — \(samples.count) samples",
                             xLabel: "time (s)", yLabel: "acceleration (g)")
        return chart.render(times: seconds, series: series.map { SVGChart.Series(name: $0.name, color: $0.svgColor, values: $0.values) })
    }
}
