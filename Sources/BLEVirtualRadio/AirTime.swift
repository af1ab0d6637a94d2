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
            // S=8 coding: 376 µs of FEC block 1 (80 µs preamble, 256 µs access address, 16 µs
            // CI, 24 µs TERM1), then 64 µs per octet of header, payload, MIC and CRC, plus 24 µs
            // TERM2 (Vol 6 Part B §2.2): 17,040 µs for the longest, as §4.5.10 says.
            return .microseconds(Int64(376 + (2 + payload + mic + 3) * 64 + 24))
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

/// Air time of Bluetooth 5's advertising PDUs (Vol 6 Part B §2.3.1, §2.3.4, §4.4.2.2): an
/// extended advertising event is an ADV_EXT_IND on the primary PHY pointing at an AUX_ADV_IND
/// on the secondary PHY, whose data continues in AUX_CHAIN_INDs; each auxiliary PDU follows the
/// one before after at least T_MAFS. Their payloads are at most 255 octets, the extended header
/// included, and take `AirTime.packet`'s time on their PHY (LE Coded S=8: 64 µs an octet,
/// 8 µs a bit).
extension AirTime {
    /// T_MAFS, the least space between two auxiliary PDUs of one chain (Vol 6 Part B §4.2.5).
    public static let minimumAuxFrameSpace: Duration = .microseconds(300)
    /// An advertising PDU's payload limit (Vol 6 Part B §2.3).
    public static let advertisingPayloadLimit = 255
    /// ADV_EXT_IND's payload: extended header length and mode, flags, ADI, AuxPtr.
    public static let advExtIndPayload = 1 + 1 + 2 + 3
    /// An AUX_CHAIN_IND's extended header: length and mode, flags, ADI, AuxPtr.
    public static let chainHeader = 1 + 1 + 2 + 3

    /// The payload sizes of the auxiliary PDUs that carry `dataCount` octets: the first with an
    /// extended header of `firstHeader` octets (plus an AuxPtr when more follow), then
    /// AUX_CHAIN_INDs. Always at least one PDU.
    public static func auxPayloads(dataCount: Int, firstHeader: Int) -> [Int] {
        let firstRoom = advertisingPayloadLimit - firstHeader
        if dataCount <= firstRoom { return [firstHeader + dataCount] }
        var sizes = [advertisingPayloadLimit]
        var left = dataCount - (firstRoom - 3)
        while left > 0 {
            let last = left <= advertisingPayloadLimit - (chainHeader - 3)
            let room = advertisingPayloadLimit - (last ? chainHeader - 3 : chainHeader)
            let n = min(left, room)
            sizes.append((last ? chainHeader - 3 : chainHeader) + n)
            left -= n
        }
        return sizes
    }

    /// How many data octets arrive when the auxiliary PDU at `lost` (0: AUX_ADV_IND or
    /// AUX_SYNC_IND, 1: the first AUX_CHAIN_IND ...) is lost: those of the PDUs before it. Nil
    /// when the chain is shorter, so nothing is lost.
    public static func receivedBefore(lost: Int, dataCount: Int, firstHeader: Int) -> Int? {
        let sizes = auxPayloads(dataCount: dataCount, firstHeader: firstHeader)
        guard lost >= 0, lost < sizes.count else { return nil }
        var received = 0
        for (i, size) in sizes.prefix(lost).enumerated() {
            let header = i == 0 ? firstHeader + (sizes.count > 1 ? 3 : 0) : (i == sizes.count - 1 ? chainHeader - 3 : chainHeader)
            received += size - header
        }
        return received
    }

    /// Air time of the auxiliary PDUs of `payloads` on `phy`, each after T_MAFS.
    public static func auxChain(_ payloads: [Int], phy: LEPHY) -> Duration {
        payloads.reduce(Duration.zero) { $0 + minimumAuxFrameSpace + packet(payload: $1, phy: phy) }
    }

    /// An extended advertising event: ADV_EXT_IND on `primary`, then the auxiliary chain.
    public static func extendedAdvertisingEvent(primary: LEPHY, secondary: LEPHY, auxPayloads: [Int]) -> Duration {
        packet(payload: advExtIndPayload, phy: primary) + auxChain(auxPayloads, phy: secondary)
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
