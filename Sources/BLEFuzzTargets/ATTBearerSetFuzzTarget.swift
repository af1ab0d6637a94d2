import BLEWire
import BLEHost

/// Fuzz target for the client's scheduler over several ATT bearers (`ATTClientBearerSet`,
/// Enhanced ATT, Core spec Vol 3 Part G §5.3, Part F §3.2.11, §3.3.2, §3.3.3): procedures
/// submitted (some pinned), arbitrary and answer-shaped PDUs on any bearer (open or not),
/// enhanced bearers opening and closing, cancellations and timeouts. Checked after every call:
/// each id completes at most once and only if submitted, nothing is sent on a bearer that is
/// not open, at most one request goes out per bearer per call and a bearer that sent one has
/// it outstanding, and `nextDeadline` is the earliest of the open bearers'. At the end
/// `close()` must have completed every submitted procedure.
enum ATTBearerSetFuzzTarget {
    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let mtus = [23, 64, 247, 517]
        var set = ATTClientBearerSet(unenhanced: ATTClientBearer(mtu: mtus[Int(input.u8()) % mtus.count]))
        var now: Duration = .zero
        var nextID: UInt64 = 1
        var submitted: Set<UInt64> = []
        var completed: Set<UInt64> = []

        func check(_ actions: ATTBearerSetActions, _ call: String, opened: [ATTBearerID], set: ATTClientBearerSet) {
            var requests: [ATTBearerID: Int] = [:]
            for a in actions {
                switch a.action {
                case let .send(bytes):
                    FuzzCheck.require(opened.contains(a.bearer), "\(call): sent on \(a.bearer), not open")
                    if let first = bytes.first, ATTOpcode(first).kind == .request {
                        requests[a.bearer, default: 0] += 1
                    }
                case let .complete(id, _):
                    FuzzCheck.require(submitted.contains(id), "\(call): completed \(id), never submitted")
                    FuzzCheck.require(!completed.contains(id), "\(call): \(id) completed twice")
                    completed.insert(id)
                default:
                    break
                }
            }
            let earliest = set.bearerIDs.compactMap { set[bearer: $0]?.nextDeadline }.min()
            FuzzCheck.require(set.nextDeadline == earliest, "\(call): nextDeadline \(String(describing: set.nextDeadline)), the bearers' \(String(describing: earliest))")
            for (bearer, count) in requests {
                FuzzCheck.require(count <= 1, "\(call): \(count) requests on \(bearer) in one call")
                if let b = set[bearer: bearer], !b.isClosed {
                    FuzzCheck.require(b.hasOutstandingRequest, "\(call): \(bearer) sent a request it does not have outstanding")
                }
            }
        }

        var steps = 0
        while !input.isAtEnd, steps < 300 {
            steps += 1
            let op = input.u8() % 9
            let bearer: ATTBearerID = [.unenhanced, .enhanced(cid: 0x40), .enhanced(cid: 0x41), .enhanced(cid: 0x42)][Int(input.u8()) % 4]
            let opened = set.bearerIDs
            var actions = ATTBearerSetActions()
            let call: String
            switch op {
            case 0, 1:
                let id = nextID
                nextID += 1
                submitted.insert(id)
                let pin: ATTBearerID? = input.u8() % 4 == 0 ? bearer : nil
                switch input.u8() % 5 {
                case 0: actions = set.submit(ReadProcedure(handle: input.u16()), id: id, pinnedTo: pin, now: now)
                case 1: actions = set.submit(ReadLongProcedure(handle: input.u16()), id: id, pinnedTo: pin, now: now)
                case 2: actions = set.submit(ReadValuesProcedure(handles: [input.u16(), input.u16()]), id: id, pinnedTo: pin, now: now)
                case 3: actions = set.submit(WriteProcedure(handle: input.u16(), value: input.chunk()), id: id, pinnedTo: pin, now: now)
                default: actions = set.submit(ExchangeMTUProcedure(clientMTU: Int(input.u16() % 600)), id: id, pinnedTo: pin, now: now)
                }
                call = "submit(\(id))"
            case 2:
                // An answer shaped like the usual ones: Read / Read Blob / Write / MTU / error.
                let shapes: [UInt8] = [0x0B, 0x0D, 0x13, 0x03, 0x21, 0x01]
                actions = set.receive([shapes[Int(input.u8()) % shapes.count]] + input.chunk(), on: bearer, now: now)
                call = "receive answer on \(bearer)"
            case 3:
                actions = set.receive(input.chunk(), on: bearer, now: now)
                call = "receive on \(bearer)"
            case 4 where bearer != .unenhanced:
                let mtu = Int(input.u16() % 600)
                actions = set.add(bearer, bearer: ATTClientBearer(mtu: mtu), now: now)
                call = "add \(bearer)"
            case 4:
                set.bearerMTUChanged(Int(input.u16()), on: .enhanced(cid: 0x40))
                call = "mtu"
            case 5:
                actions = set.remove(bearer, now: now)
                call = "remove \(bearer)"
            case 6:
                actions = set.cancel(id: UInt64(input.u8()) % nextID, now: now)
                call = "cancel"
            default:
                now += .seconds(Int(input.u8() % 40))
                actions = set.expire(now: now)
                call = "expire"
            }
            // A bearer added in this call may send at once.
            let sendable = op == 4 ? Array(Set(opened + set.bearerIDs)) : opened
            check(actions, call, opened: sendable, set: set)
        }
        let closing = set.close()
        check(closing, "close", opened: [], set: set)
        FuzzCheck.require(completed == submitted, "after close: \(submitted.subtracting(completed).sorted()) never completed")
        FuzzCheck.require(set.nextDeadline == nil, "after close a deadline is left")
    }
}
