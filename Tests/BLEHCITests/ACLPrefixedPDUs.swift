@testable import BLEHCI

extension ACLFlowController {
    /// What the layer above sends through `enqueue(handle:prefix:payload:send:)` on LE: the
    /// L2CAP basic header (length, channel) as the prefix. These tests sit below that layer, so
    /// they write the header themselves; BLEHost's `enqueueBasicFrame` is the product's one.
    @discardableResult
    mutating func enqueue(handle: UInt16, channel: UInt16, payload: consuming [UInt8], send: ([UInt8]) -> Void) -> Int {
        let header = UInt32(payload.count) | UInt32(channel) << 16
        return enqueue(handle: handle, prefix: header, payload: consume payload, send: send)
    }
}
