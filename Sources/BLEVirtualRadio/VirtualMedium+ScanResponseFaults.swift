import BLEHCI

/// Scan responses going wrong on the air (fault injection): an advertiser's answers to some scan
/// requests lost, or reported to the scanner's host only after later advertising events. Real
/// radios lose a SCAN_REQ or SCAN_RSP to collisions and to the scanner's backoff (Core spec Vol 6
/// Part B §4.4.3.2), and a host may see a scan response only after the advertiser's next
/// advertisement; the medium otherwise answers every scan request within its event.
extension VirtualMedium {
    /// What happens to one advertiser's scan responses, per scanner.
    public struct ScanResponseFault: Hashable, Sendable {
        /// Which scan requests of each scanner go unanswered, counted from 0 (every active
        /// scanner in range of a scannable advertising event sends one).
        public var lostRequests: Set<Int>
        /// How many of the advertiser's later advertising events each answered scan response is
        /// reported after (0: in its own event, right after the advertisement).
        public var lateByEvents: Int

        /// A fault losing the answers to `lostRequests` and reporting the others `lateByEvents`
        /// advertising events late (negative counts as 0).
        public init(lostRequests: Set<Int> = [], lateByEvents: Int = 0) {
            self.lostRequests = lostRequests
            self.lateByEvents = max(0, lateByEvents)
        }
    }

    /// One scanner's view of a faulty advertiser: its scan requests so far and the responses
    /// not yet reported, each with the number of advertising events still to come before it.
    struct ScanResponseFaultState: Sendable {
        var requests = 0
        var late: [(eventsToGo: Int, packet: HostBoundPacket)] = []
    }

    /// A key for `ScanResponseFaultState`: the advertiser and the scanner.
    struct ScanResponseFaultPair: Hashable, Sendable {
        let advertiser: ControllerID
        let scanner: ControllerID
    }

    /// Makes `advertiser`'s scan responses go wrong as `fault` says, for every scanner, from now
    /// on; nil puts them right (responses still waiting are dropped).
    public mutating func setScanResponseFault(_ advertiser: ControllerID, _ fault: ScanResponseFault?) {
        scanResponseFaults[advertiser] = fault
        for pair in scanResponseFaultStates.keys where pair.advertiser == advertiser {
            scanResponseFaultStates[pair] = nil
        }
    }

    /// What `scanner`'s host gets of one advertising event of `advertiser`: `packets` (the
    /// advertising report, then the scan response's when there is one) as the advertiser's fault
    /// makes them, after the late responses now due.
    mutating func applyScanResponseFault(_ fault: ScanResponseFault, from advertiser: ControllerID, to scanner: ControllerID,
                                         _ packets: [HostBoundPacket]) -> [HostBoundPacket] {
        let pair = ScanResponseFaultPair(advertiser: advertiser, scanner: scanner)
        var state = scanResponseFaultStates[pair] ?? ScanResponseFaultState()
        var out: [HostBoundPacket] = []
        var response: HostBoundPacket?
        for packet in packets {
            if case let .event(.le(.advertisingReport(reports))) = packet, reports.contains(where: \.isScanResponse) {
                response = packet
            } else if case let .event(.le(.extendedAdvertisingReport(reports))) = packet, reports.contains(where: \.isScanResponse) {
                // An extended scan's report of a legacy SCAN_RSP.
                response = packet
            } else {
                out.append(packet)
            }
        }
        // Responses held from earlier events whose time has come: after this advertisement.
        if !packets.isEmpty {
            for i in state.late.indices { state.late[i].eventsToGo -= 1 }
            out += state.late.filter { $0.eventsToGo <= 0 }.map(\.packet)
            state.late.removeAll { $0.eventsToGo <= 0 }
        }
        if let response {
            let request = state.requests
            state.requests += 1
            if !fault.lostRequests.contains(request) {
                if fault.lateByEvents == 0 {
                    out.append(response)
                } else {
                    state.late.append((fault.lateByEvents, response))
                }
            }
        }
        scanResponseFaultStates[pair] = state
        return out
    }
}
