/// Fixed-point text for numbers, without Foundation's formatters (the `ble` tool avoids them).
public enum NumberText {
    /// `value` rounded to `decimals` places: fixed(0.8329, 3) = "0.833", fixed(-1.5, 1) = "-1.5".
    /// Non-finite values print as "nan", "inf" or "-inf".
    public static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        let places = max(0, min(decimals, 9))
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e15 else { return String(value) }
        let units = Int64(scaled)
        let whole = units / Int64(scale)
        var text = (value < 0 && units != 0 ? "-" : "") + String(whole)
        if places > 0 {
            let fraction = String(units % Int64(scale))
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return text
    }

    /// Right-aligns `text` in `width` columns.
    public static func right(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// Left-aligns `text` in exactly `width` columns (cut when longer).
    public static func left(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    /// Seconds with one decimal: "3.2s".
    public static func seconds(_ duration: Duration) -> String {
        let (s, atto) = duration.components
        return fixed(Double(s) + Double(atto) / 1e18, 1) + "s"
    }

    /// "10 s", "2.5 s": a duration in whole seconds and tenths, as the central flows state
    /// their timeouts (tenths cut, not rounded, so a limit never reads longer than it is).
    public static func spacedSeconds(_ duration: Duration) -> String {
        let (whole, atto) = duration.components
        let tenths = Int(atto / 100_000_000_000_000_000)
        return tenths == 0 ? "\(whole) s" : "\(whole).\(tenths) s"
    }
}

extension String {
    /// Four upper-case hex digits, as handles are written ("0x002A" without the prefix).
    public init(format4 value: UInt16) {
        let digits = Swift.String(value, radix: 16, uppercase: true)
        self.init(Swift.String(repeating: "0", count: Swift.max(0, 4 - digits.count)) + digits)
    }

    /// `self` left-aligned in a column of `width`, always followed by at least one space (one
    /// when it fills the column), as `ble` lists names before their descriptions.
    public func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + Swift.String(repeating: " ", count: width - count)
    }
}
