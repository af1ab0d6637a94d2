#if canImport(Glibc)
import Glibc
#endif

/// An SVG line chart written by hand (no library): axes with round-numbered ticks and grid
/// lines, one polyline per series, a legend and a title. `ble accel --plot FILE.svg` writes the
/// whole session's x, y and z with it. Pure: the same input gives the same text.
public struct SVGChart: Sendable {
    /// One line of the chart.
    public struct Series: Sendable {
        /// Its legend entry.
        public var name: String
        /// Any SVG colour ("#d62728").
        public var color: String
        /// One value per time; non-finite values break the line.
        public var values: [Double]

        /// A series named `name` (the legend), drawn in `color`.
        public init(name: String, color: String, values: [Double]) {
            self.name = name
            self.color = color
            self.values = values
        }
    }

    /// The title above the plot.
    public var title: String
    /// The horizontal axis' label.
    public var xLabel: String
    /// The vertical axis' label.
    public var yLabel: String
    /// Width in pixels.
    public var width = 800
    /// Height in pixels.
    public var height = 400

    /// A chart `width` by `height` pixels with these labels.
    public init(title: String, xLabel: String, yLabel: String, width: Int = 800, height: Int = 400) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.width = width
        self.height = height
    }
    /// Space for the tick labels, the title and the axis labels.
    public static let margin = (left: 70.0, right: 20.0, top: 40.0, bottom: 50.0)

    /// The SVG document for `series` over `times` (seconds; as many as values).
    public func render(times: [Double], series: [Series]) -> String {
        let m = Self.margin
        let plotWidth = Double(width) - m.left - m.right
        let plotHeight = Double(height) - m.top - m.bottom
        let finiteTimes = times.filter(\.isFinite)
        let values = series.flatMap(\.values).filter(\.isFinite)
        let (t0, t1) = Self.range(finiteTimes.min(), finiteTimes.max())
        let (v0, v1) = Self.range(values.min(), values.max())
        func x(_ t: Double) -> Double { m.left + (t - t0) / (t1 - t0) * plotWidth }
        func y(_ v: Double) -> Double { m.top + (v1 - v) / (v1 - v0) * plotHeight }

        var out = ["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" font-family=\"sans-serif\" font-size=\"12\">"]
        out.append("<rect width=\"\(width)\" height=\"\(height)\" fill=\"white\"/>")
        out.append("<text x=\"\(Self.n(Double(width) / 2))\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">\(Markup.escaped(title))</text>")
        // Grid and ticks.
        for t in Self.ticks(t0, t1) {
            out.append("<line x1=\"\(Self.n(x(t)))\" y1=\"\(Self.n(m.top))\" x2=\"\(Self.n(x(t)))\" y2=\"\(Self.n(m.top + plotHeight))\" stroke=\"#e0e0e0\"/>")
            out.append("<text x=\"\(Self.n(x(t)))\" y=\"\(Self.n(m.top + plotHeight + 16))\" text-anchor=\"middle\">\(Self.label(t))</text>")
        }
        for v in Self.ticks(v0, v1) {
            out.append("<line x1=\"\(Self.n(m.left))\" y1=\"\(Self.n(y(v)))\" x2=\"\(Self.n(m.left + plotWidth))\" y2=\"\(Self.n(y(v)))\" stroke=\"#e0e0e0\"/>")
            out.append("<text x=\"\(Self.n(m.left - 6))\" y=\"\(Self.n(y(v) + 4))\" text-anchor=\"end\">\(Self.label(v))</text>")
        }
        // Axes.
        out.append("<line x1=\"\(Self.n(m.left))\" y1=\"\(Self.n(m.top))\" x2=\"\(Self.n(m.left))\" y2=\"\(Self.n(m.top + plotHeight))\" stroke=\"black\"/>")
        out.append("<line x1=\"\(Self.n(m.left))\" y1=\"\(Self.n(m.top + plotHeight))\" x2=\"\(Self.n(m.left + plotWidth))\" y2=\"\(Self.n(m.top + plotHeight))\" stroke=\"black\"/>")
        out.append("<text x=\"\(Self.n(m.left + plotWidth / 2))\" y=\"\(Self.n(Double(height) - 10))\" text-anchor=\"middle\">\(Markup.escaped(xLabel))</text>")
        out.append("<text transform=\"translate(16 \(Self.n(m.top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(Markup.escaped(yLabel))</text>")
        // One polyline per unbroken run of each series.
        for s in series {
            var run: [String] = []
            func flush() {
                if !run.isEmpty {
                    out.append("<polyline fill=\"none\" stroke=\"\(Markup.escaped(s.color))\" stroke-width=\"1.5\" points=\"\(run.joined(separator: " "))\"/>")
                }
                run = []
            }
            for (t, v) in zip(times, s.values) {
                guard t.isFinite, v.isFinite else {
                    flush()
                    continue
                }
                run.append(Self.n(x(t)) + "," + Self.n(y(v)))
            }
            flush()
        }
        if values.isEmpty {
            out.append("<text x=\"\(Self.n(m.left + plotWidth / 2))\" y=\"\(Self.n(m.top + plotHeight / 2))\" text-anchor=\"middle\" fill=\"gray\">no samples</text>")
        }
        // Legend, top right inside the plot.
        for (i, s) in series.enumerated() {
            let ly = m.top + 14 + Double(i) * 16
            let lx = m.left + plotWidth - 70
            out.append("<line x1=\"\(Self.n(lx))\" y1=\"\(Self.n(ly - 4))\" x2=\"\(Self.n(lx + 20))\" y2=\"\(Self.n(ly - 4))\" stroke=\"\(Markup.escaped(s.color))\" stroke-width=\"2\"/>")
            out.append("<text x=\"\(Self.n(lx + 26))\" y=\"\(Self.n(ly))\">\(Markup.escaped(s.name))</text>")
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    /// A range to draw: the data's, or ±0.5 around a single value, or 0...1 with no data.
    static func range(_ low: Double?, _ high: Double?) -> (Double, Double) {
        guard let low, let high else { return (0, 1) }
        return high - low < 1e-9 ? (low - 0.5, high + 0.5) : (low, high)
    }

    /// Round tick values inside `low...high`: steps of 1, 2 or 5 × 10^k, about five of them.
    public static func ticks(_ low: Double, _ high: Double) -> [Double] {
        let span = high - low
        guard span > 0, span.isFinite else { return [] }
        let rough = span / 5
        let magnitude = pow(10, floor(log10(rough)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
        var ticks: [Double] = []
        var k = ceil(low / step)
        while k * step <= high + step * 1e-9, ticks.count < 50 {
            ticks.append(k * step == 0 ? 0 : k * step)
            k += 1
        }
        return ticks
    }

    /// A tick label: as few decimals as the value needs, at most three.
    public static func label(_ value: Double) -> String {
        for decimals in 0...3 {
            var scale = 1.0
            for _ in 0..<decimals { scale *= 10 }
            if abs((value * scale).rounded() - value * scale) < 1e-6 { return NumberText.fixed(value, decimals) }
        }
        return NumberText.fixed(value, 3)
    }

    /// A coordinate with two decimals, trailing zeros dropped ("12.5", "40").
    public static func n(_ value: Double) -> String {
        var text = NumberText.fixed(value, 2)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }
}
