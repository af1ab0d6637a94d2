/// A line chart of several series drawn with characters, newest values on the right: what
/// `ble accel` shows live for x, y and z (docs/SYSTEMS.md S4 charts them). Pure, for tests.
public struct TerminalChart: Sendable {
    /// One line of the chart.
    public struct Series: Sendable {
        /// The character the series is drawn with (and its legend key).
        public var mark: Character
        /// ANSI SGR colour code (31 red, 32 green, 34 blue), used when colours are on.
        public var color: Int
        /// The values, oldest first.
        public var values: [Double]

        /// A series drawn with `mark`, in ANSI colour `color` when colours are on.
        public init(mark: Character, color: Int, values: [Double]) {
            self.mark = mark
            self.color = color
            self.values = values
        }
    }

    /// Columns taken by the value labels and the axis.
    public static let labelWidth = 9

    /// `height` plot rows (at least 2) under one another, each `width` columns wide (at least
    /// `labelWidth + 1`), then the time axis. The value range covers every shown value (a
    /// flat range is widened by 0.5 each way); the top, middle and bottom rows are labelled.
    /// Where series meet, the later one is drawn. Non-finite values are not drawn.
    public static func render(_ series: [Series], width: Int, height: Int, colors: Bool = false) -> [String] {
        let rows = max(2, height)
        let columns = max(1, width - labelWidth)
        let shown = series.map { Array($0.values.suffix(columns)) }
        let finite = shown.flatMap { $0 }.filter(\.isFinite)
        var low = finite.min() ?? -1
        var high = finite.max() ?? 1
        if high - low < 1e-9 {
            low -= 0.5
            high += 0.5
        }
        var grid = [[Int?]](repeating: [Int?](repeating: nil, count: columns), count: rows)
        for (index, values) in shown.enumerated() {
            // Right-aligned: the newest value is in the last column.
            let offset = columns - values.count
            for (i, value) in values.enumerated() where value.isFinite {
                let row = Int(((high - value) / (high - low) * Double(rows - 1)).rounded())
                grid[min(max(row, 0), rows - 1)][offset + i] = index
            }
        }
        var lines: [String] = []
        for (r, cells) in grid.enumerated() {
            let label: String
            if r == 0 {
                label = NumberText.fixed(high, 2)
            } else if r == rows - 1 {
                label = NumberText.fixed(low, 2)
            } else if r == (rows - 1) / 2 {
                label = NumberText.fixed(high - (high - low) * Double(r) / Double(rows - 1), 2)
            } else {
                label = ""
            }
            var line = NumberText.right(label, labelWidth - 2) + " ┤"
            for cell in cells {
                guard let index = cell else {
                    line += " "
                    continue
                }
                let mark = String(series[index].mark)
                line += colors ? "\u{1B}[\(series[index].color)m" + mark + "\u{1B}[0m" : mark
            }
            lines.append(line)
        }
        lines.append(String(repeating: " ", count: labelWidth - 2) + " └" + String(repeating: "─", count: columns))
        return lines
    }
}
