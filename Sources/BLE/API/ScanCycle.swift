import BLEHCI

/// A duty-cycled scan: the controller listens for `duration` at the start of every `period`
/// and rests the rest of it, for as long as the scan runs (LE Set Extended Scan Enable's
/// Duration and Period, Core spec Vol 4 Part E §7.8.65), which saves power on a long scan at
/// the cost of missing what is sent while it rests. The controller does it alone, with no
/// command from the host each period; it needs the extended scanning commands.
public struct ScanCycle: Sendable, Hashable {
    /// How long the controller listens each period: 10 ms ... 655.35 s, in 10 ms steps.
    public var duration: Duration
    /// How often it starts again: 1.28 s ... 83,884.8 s, in 1.28 s steps, longer than `duration`.
    public var period: Duration

    /// A cycle listening `duration` at the start of every `period` (checked when a scan
    /// starts with it: `.invalidArgument` outside the ranges above).
    public init(duration: Duration, period: Duration) {
        self.duration = duration
        self.period = period
    }

    /// Duration in 10 ms units and Period in 1.28 s units (§7.8.65), rounded to the nearest.
    func units() throws(BLEError) -> (duration: UInt16, period: UInt16) {
        let d = AdvertisingSetParameters.units(duration, 10_000), p = AdvertisingSetParameters.units(period, 1_280_000)
        guard (1...0xFFFF).contains(d), (1...0xFFFF).contains(p), d * 10 < p * 1280 else {
            throw .invalidArgument("a scan cycle listens 10 ms ... 655.35 s every 1.28 s ... 83,884.8 s, the duration shorter than the period")
        }
        return (UInt16(d), UInt16(p))
    }
}
