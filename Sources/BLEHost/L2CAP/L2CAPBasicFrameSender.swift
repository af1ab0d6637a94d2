import BLEHCI

/// L2CAP's outbound side of fragmentation (Core spec Vol 3 Part A §7.2): a basic frame (§3.1)
/// goes to the ACL flow controller with its header as the prefix of the PDU's first fragment,
/// so the payload is copied once on its way to the transport, or not at all when it fits one
/// buffer and its array has room for the headers. The inbound side is `L2CAPRecombiner`.
extension ACLFlowController {
    /// Queues the basic frame `payload` on `channel` of `handle`; `send` gets each encoded ACL
    /// packet that may go now, in order. A payload over 65535 octets is cut to fit the length
    /// field, as `L2CAPFrame.encode` does. Returns the handle's `queuedPDUs` afterwards.
    @inlinable
    @discardableResult
    public mutating func enqueueBasicFrame(handle: UInt16, channel: UInt16, payload: consuming [UInt8],
                                           send: ([UInt8]) -> Void) -> Int {
        if payload.count > Int(UInt16.max) { payload.removeLast(payload.count - Int(UInt16.max)) }
        let header = UInt32(payload.count) | UInt32(channel) << 16
        return enqueue(handle: handle, prefix: header, payload: consume payload, send: send)
    }
}
