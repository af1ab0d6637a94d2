import Foundation

// The stream events of an L2CAP channel's pipe: decided under its lock, delivered on the run
// loop the stream is scheduled in.
extension L2CAPStreamBridge {
    /// Posts a delivery to the stream's run loop if an event is due and none is on its way.
    func kick(_ side: L2CAPStreamSide) {
        let target = state.withLock { s -> RunLoopTarget? in
            guard s[side].postedTo == nil, let target = s[side].targets.first, self.nextEvent(side, &s, taking: false) != nil else { return nil }
            s[side].postedTo = target
            return target
        }
        guard let target else { return }
        target.post { self.deliver(side, on: target) }
    }

    /// On the run loop: the event due now (decided now, so a stale one is never delivered) to
    /// the stream's delegate, then the next. Nothing when the stream has been removed from this
    /// run loop since (its events go where it is scheduled now).
    private func deliver(_ side: L2CAPStreamSide, on target: RunLoopTarget) {
        let event = state.withLock { s -> Stream.Event? in
            if let posted = s[side].postedTo, posted.matches(target.runLoop, target.mode) { s[side].postedTo = nil }
            guard s[side].targets.contains(where: { $0.matches(target.runLoop, target.mode) }) else { return nil }
            return self.nextEvent(side, &s, taking: true)
        }
        if let event {
            let stream: Stream? = side == .input ? inputStream.value : outputStream.value
            if let stream { stream.delegate?.stream(stream, handle: event) }
        }
        kick(side)
    }

    /// The event due for `side`, marked as delivered when `taking`.
    private func nextEvent(_ side: L2CAPStreamSide, _ s: inout State, taking: Bool) -> Stream.Event? {
        guard s[side].status == .open else { return nil }
        if !s[side].openReported {
            if taking { s[side].openReported = true }
            return .openCompleted
        }
        let end = side == .input ? (s.inbound.isEmpty ? s.inboundEnd : nil) : s.outboundEnd
        if let end {
            guard !s[side].endReported else { return nil }
            if taking { s[side].endReported = true }
            if case .failed = end { return .errorOccurred }
            return .endEncountered
        }
        guard s[side].armed else { return nil }
        let ready = side == .input ? !s.inbound.isEmpty : s.outbound.count < outboundLimit
        guard ready else { return nil }
        if taking { s[side].armed = false }
        return side == .input ? .hasBytesAvailable : .hasSpaceAvailable
    }
}
