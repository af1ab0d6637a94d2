/// A sparkline: one block character per value, its height scaled between the smallest and the
/// largest value shown (`ble heart-rate` draws the recent bpm with it). Pure, for tests.
public struct Sparkline: Sendable {
    /// Eight heights, lowest first (Unicode block elements U+2581–U+2588).
    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    /// The last `width` values as blocks. All equal values sit in the middle; no values (or a
    /// width below 1) give an empty string. Non-finite values are drawn as a space.
    public static func render(_ values: [Double], width: Int) -> String {
        guard width > 0 else { return "" }
        let shown = values.suffix(width)
        let finite = shown.filter(\.isFinite)
        guard let low = finite.min(), let high = finite.max() else { return String(repeating: " ", count: shown.count) }
        let top = blocks.count - 1
        return String(shown.map { value -> Character in
            guard value.isFinite else { return " " }
            guard high > low else { return blocks[top / 2] }
            let level = Int(((value - low) / (high - low) * Double(top)).rounded())
            return blocks[min(max(level, 0), top)]
        })
    }
}
