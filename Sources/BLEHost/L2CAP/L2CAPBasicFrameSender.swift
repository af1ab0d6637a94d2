import BLEHCI

/// L2CAP's outbound side of fragmentation (Core spec Vol 3 Part A §7.2): a basic frame (§3.1)
/// goes to the ACL flow controller with its header as the prefix of the PDU's first fragment,
/// so the payload is copied once on its way to the transport, or not at all when it fits one
/// buffer and its array has room for the headers. The inbound side is `L2CAPRecombiner`.
extension ACLFlowController {
    /// Queues the basic frame `payload` on `channel` of `handle`; `send` gets each encoded ACL
    /// packet that may go now, in order. A payload over 65535 octets is cut to fit the length
    /// field, as `L2CAPFrame.encode` does. Returns the handle's `queuedPDUs` afterwards.
    ///
    /// Deliberately not `@inlinable`: inlined, it grew the notification path's drain past what
    /// the optimizer inlines into its caller, about 30 instructions per notification more
    /// (`ble-bench raw` under callgrind) than this one call costs.
    @discardableResult
    public mutating func enqueueBasicFrame(handle: UInt16, channel: UInt16, payload: consuming [UInt8],
                                           send: ([UInt8]) -> Void) -> Int {
        let count = payload.count
        guard count <= Int(UInt16.max) else { return enqueueCutBasicFrame(handle: handle, channel: channel, payload: payload, send: send) }
        return enqueue(handle: handle, prefix: L2CAPFrame.basicHeader(length: count, channel: channel), payload: payload, send: send)
    }

    /// `enqueueBasicFrame` for a payload over the length field: its first 65535 octets.
    private mutating func enqueueCutBasicFrame(handle: UInt16, channel: UInt16, payload: [UInt8], send: ([UInt8]) -> Void) -> Int {
        enqueue(handle: handle, prefix: L2CAPFrame.basicHeader(length: L2CAPFrame.maximumPayloadLength, channel: channel),
                payload: Array(payload.prefix(L2CAPFrame.maximumPayloadLength)), send: send)
    }
}
