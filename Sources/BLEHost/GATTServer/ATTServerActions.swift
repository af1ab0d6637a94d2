/// What an `ATTServer` asks its owner to do, in order. Sans-IO: the server never sends or waits
/// itself (ARCHITECTURE.md).
public enum ServerAction: Hashable, Sendable {
    /// How a write reached a dynamic value.
    public enum WriteKind: Hashable, Sendable {
        /// Write Request (Vol 3 Part F §3.4.5.1): answer with `completeWrite`; the client waits.
        case request
        /// Write Command (§3.4.5.3): apply it; nothing is sent back, `completeWrite` is optional
        /// and ignored.
        case command
        /// Signed Write Command (§3.4.5.4) whose signature and counter were verified
        /// (`ATTServer.applySignedWrite`): like `.command`, nothing is sent back.
        case signedCommand
        /// One run of an Execute Write (§3.4.6.3), contiguous prepared segments of one handle
        /// merged: answer with `completeWrite`; the next run waits for it.
        case prepared
    }

    /// Send this ATT PDU now: a response or an Error Response. Responses are never queued
    /// (Vol 3 Part F §3.3.2 allows one outstanding request, so there is at most one).
    case send([UInt8])
    /// The client reads a dynamic value: answer with `completeRead(id:…)`, giving the value from
    /// `offset` on (the server cuts it to fit the PDU), or an error such as Invalid Offset
    /// (`offset` past the end), an application error, or Unlikely Error when the handler failed.
    case read(id: UInt64, handle: UInt16, offset: Int)
    /// The client writes a dynamic value. The new value is the old one's first `offset` octets
    /// followed by `value` (Vol 3 Part F §3.4.5.1: a variable-length value takes the written
    /// length). Answer with `completeWrite(id:…)` unless `kind` is `.command` or `.signedCommand`.
    case write(id: UInt64, handle: UInt16, value: [UInt8], offset: Int, kind: WriteKind)
    /// A stored value was changed by a client (the server already applied it), for the log.
    case valueWritten(handle: UInt16, value: [UInt8])
    /// The client changed its Client Characteristic Configuration for the characteristic whose
    /// value is at `valueHandle` (Vol 3 Part G §3.3.3.3).
    case subscriptionChanged(valueHandle: UInt16, notifications: Bool, indications: Bool)
    /// The client confirmed the indication sent with this id (Vol 3 Part F §3.4.7.3).
    case indicationConfirmed(id: UInt64)
    /// The indication with this id was not confirmed within the transaction timeout
    /// (Vol 3 Part F §3.3.3), or was still queued when the bearer failed.
    case indicationTimedOut(id: UInt64)
    /// The update queue, once full, has room again: it has drained to `readyThreshold`
    /// (CoreBluetooth's `peripheralManagerIsReady(toUpdateSubscribers:)`).
    case readyToUpdate
    /// The client exchanged MTU; this is the ATT_MTU from now on (Vol 3 Part F §3.4.2.2).
    case mtuChanged(Int)
    /// A transaction timed out: no more ATT PDUs may be sent on this bearer (Vol 3 Part F
    /// §3.3.3); the owner should disconnect.
    case closeBearer
}

/// The answer to `ATTServer.notify` / `.indicate`.
public enum UpdateResult: Hashable, Sendable {
    /// Queued; `nextOutgoing()` hands it out.
    case queued
    /// The connection's update queue is full; `.readyToUpdate` follows once there is room.
    case queueFull
    /// The client has not enabled this kind of update in the characteristic's CCCD, or the
    /// bearer failed (an indication timed out, `ATTServer.isClosed`) and nothing more is sent.
    case notSubscribed
}
