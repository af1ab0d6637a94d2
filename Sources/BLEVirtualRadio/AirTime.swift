import BLEHCI

/// How long LE link-layer packets occupy the air, and so how much data a connection can carry.
/// Core spec Vol 6 Part B §2.1 (packet format: preamble 1 octet on LE 1M, 2 on LE 2M; access
/// address 4; header 2; payload; MIC 4 when encrypted; CRC 3), §1.2 (symbol rates 1 and 2 Msym/s)
/// and §4.1.1 (T_IFS = 150 µs between packets of one connection event).
public enum AirTime {
    /// Inter frame space, Vol 6 Part B §4.1.1.
    public static let interFrameSpace: Duration = .microseconds(150)

    /// Air time of one data channel PDU with `payload` octets.
    public static func packet(payload: Int, phy: LEPHY, encrypted: Bool = false) -> Duration {
        let mic = encrypted && payload > 0 ? 4 : 0
        switch phy {
        case .le2M:
            return .microseconds(Int64((2 + 4 + 2 + payload + mic + 3) * 4))
        case .leCoded:
            // S=8 coding: 80 µs preamble, 376 µs access address/CI/TERM1, then 64 µs per
            // octet of header, payload, MIC and CRC, plus 24 µs TERM2 (Vol 6 Part B §2.2).
            return .microseconds(Int64(80 + 376 + (2 + payload + mic + 3) * 64 + 24))
        default:
            return .microseconds(Int64((1 + 4 + 2 + payload + mic + 3) * 8))
        }
    }

    /// One exchange of a connection event: a PDU one way, T_IFS, the answer (an empty PDU when
    /// the other side has nothing to send), T_IFS.
    public static func exchange(payload: Int, answer: Int = 0, phy: LEPHY, encrypted: Bool = false) -> Duration {
        packet(payload: payload, phy: phy, encrypted: encrypted) + interFrameSpace
            + packet(payload: answer, phy: phy, encrypted: encrypted) + interFrameSpace
    }

    /// PDUs of `payload` octets that fit in one connection event of `interval` when the peer
    /// only acknowledges, capped by `maximumPerEvent` (a controller's own limit), at least one.
    public static func packetsPerEvent(payload: Int, phy: LEPHY, interval: Duration, encrypted: Bool = false,
                                       maximumPerEvent: Int? = nil) -> Int {
        let one = exchange(payload: payload, phy: phy, encrypted: encrypted)
        let fit = max(1, Int(interval / one))
        return min(fit, maximumPerEvent ?? fit)
    }

    /// The most application data a one-way stream of ATT notifications can carry per second:
    /// each PDU holds one notification of `payload − 4 (L2CAP) − 3 (ATT)` octets, and
    /// `packetsPerEvent` of them go each interval. With LE 2M, 251-octet PDUs and a 7.5 ms
    /// interval this is 5 × 244 octets per 7.5 ms, about 1.30 Mbit/s.
    public static func notificationThroughput(payload: Int, phy: LEPHY, interval: Duration, encrypted: Bool = false,
                                              maximumPerEvent: Int? = nil) -> Double {
        let perEvent = packetsPerEvent(payload: payload, phy: phy, interval: interval, encrypted: encrypted,
                                       maximumPerEvent: maximumPerEvent)
        let bits = Double(perEvent * max(0, payload - 7) * 8)
        return bits / interval.seconds
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
