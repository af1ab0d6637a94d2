import BLE
import BLEProfiles
import BLEWire

/// Every sample of a session with its arrival time: the live chart's data and the SVG's.
public struct AccelerometerRecording: Sendable {
    /// Each sample's arrival time on the host clock.
    public private(set) var times: [Duration] = []
    /// The samples, in order.
    public private(set) var samples: [AccelerometerSample] = []
    /// The device charted ("BLE001 C0:…"), once known.
    public private(set) var device: String?

    /// An empty recording, before the first event.
    public init() {}

    /// Keeps what the chart needs from `event`.
    public mutating func record(_ event: AccelerometerCentralEvent) {
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

    /// x, y and z as the charts draw them: mark, ANSI colour, SVG colour, name, values.
    public var series: [(mark: Character, color: Int, svgColor: String, name: String, values: [Double])] {
        [("x", 31, "#d62728", "x", samples.map { Double($0.x) }),
         ("y", 32, "#2ca02c", "y", samples.map { Double($0.y) }),
         ("z", 34, "#1f77b4", "z", samples.map { Double($0.z) })]
    }

    /// The live screen: a header, the three-line chart and its legend.
    public func screen(width: Int, height: Int, colors: Bool) -> [String] {
        var out = ["\(device ?? "accelerometer")  —  \(samples.count) sample\(samples.count == 1 ? "" : "s")"
                   + (samples.last.map { "  latest " + AccelerometerLines.sample($0) } ?? ""), ""]
        out += TerminalChart.render(series.map { TerminalChart.Series(mark: $0.mark, color: $0.color, values: $0.values) },
                                    width: width, height: max(4, height - 6), colors: colors)
        let legend = series.map { s in colors ? "\u{1B}[\(s.color)m\(s.mark)\u{1B}[0m \(s.name)" : "\(s.mark) \(s.name)" }
        out += ["  " + legend.joined(separator: "   ") + "   (g; newest on the right)", "Ctrl-C to stop"]
        return out
    }

    /// Each sample's arrival in seconds from the first one's.
    var seconds: [Double] {
        let start = times.first ?? .zero
        return times.map { t -> Double in
            let (s, atto) = (t - start).components
            return Double(s) + Double(atto) / 1e18
        }
    }

    /// The whole session as CSV (RFC 4180): a header line `t,x,y,z`, then one line per sample,
    /// `t` in seconds from the first sample (to the millisecond), x, y, z in g, each Float32 in
    /// its shortest form that reads back as the same Float32 (non-finite values, which a peer
    /// may send, are written as `nan`, `inf` or `-inf`). Lines end with CRLF, as the RFC has them.
    public func csv() -> String {
        var out = "t,x,y,z\r\n"
        for (t, s) in zip(seconds, samples) {
            out += NumberText.fixed(t, 3) + "," + [s.x, s.y, s.z].map(Self.csvNumber).joined(separator: ",") + "\r\n"
        }
        return out
    }

    static func csvNumber(_ v: Float) -> String {
        if v.isNaN { return "nan" }
        if v.isInfinite { return v > 0 ? "inf" : "-inf" }
        return "\(v)"
    }

    /// The whole session as an SVG chart, time in seconds from the first sample.
    public func svg() -> String {
        let seconds = self.seconds
        let chart = SVGChart(title: "Accelerometer \(device ?? "")".trimmingSpaces + " — \(samples.count) samples",
                             xLabel: "time (s)", yLabel: "acceleration (g)")
        return chart.render(times: seconds, series: series.map { SVGChart.Series(name: $0.name, color: $0.svgColor, values: $0.values) })
    }
}
