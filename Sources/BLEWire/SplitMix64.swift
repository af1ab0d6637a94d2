/// A small seeded pseudo-random generator (SplitMix64: a Weyl sequence through a 64-bit mixer),
/// for simulated data that must be identical on every run and every platform. Not for secrets.
public struct SplitMix64: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The Weyl increment: the odd 64-bit number nearest 2^64 / golden ratio.
    public static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The next value of the sequence: the state advanced by `increment`, then mixed.
    public mutating func next() -> UInt64 {
        state &+= Self.increment
        return Self.mix(state)
    }

    /// The finalizer alone: a stateless hash of one 64-bit value, so simulations can derive a
    /// value from (seed, time step) without keeping state.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in [-1, 1) from the top 53 bits of `bits`.
    public static func signedUnit(_ bits: UInt64) -> Double {
        Double(bits >> 11) / Double(UInt64(1) << 52) - 1
    }
}
