/// Comparison of secret values (MACs, confirm values, DHKey checks) that reads every octet
/// whatever the first difference, so the time it takes tells an attacker nothing about how much
/// of a forged value was right.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same octets. Lengths are not secret: different lengths are
    /// unequal at once.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
