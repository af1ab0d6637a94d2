import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// Two virtual controllers on one medium without the air-time model, their event masks set, for
/// tests that drive the medium directly (no hosts, no radio): a connection between them, and
/// batches of host frames handed over the way `VirtualRadio` does.
struct TwoControllerMedium {
    var medium = VirtualMedium()
    let peripheralAddress = BDAddress(rawValue: 0x00_00_00_00_00_AA)
    let peripheral: VirtualMedium.ControllerID
    let central: VirtualMedium.ControllerID

    /// The peripheral's LE ACL buffers hold `peripheralBuffer` bytes (the default otherwise).
    init(peripheralBuffer: UInt16? = nil) {
        medium.airTimeModel = false
        var configuration = VirtualControllerConfiguration()
        if let peripheralBuffer { configuration.leACLBufferLength = peripheralBuffer }
        peripheral = medium.add(VirtualController(address: peripheralAddress, configuration: configuration))
        central = medium.add(VirtualController(address: BDAddress(rawValue: 0x00_00_00_00_00_BB)))
        for id in [peripheral, central] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
    }

    /// Advertises on the peripheral and connects the central to it; the two ends' handles.
    mutating func connect() throws -> (central: UInt16, peripheral: UInt16) {
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), from: peripheral, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: peripheral, now: .zero)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(peripheralAddress, type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400),
                           from: central, now: .zero)
        var handles: (UInt16?, UInt16?)
        for d in medium.advance(to: .zero) {
            guard case let .event(.le(.connectionComplete(c))) = d.packet else { continue }
            if d.to == central { handles.0 = c.handle } else { handles.1 = c.handle }
        }
        return (try XCTUnwrap(handles.0), try XCTUnwrap(handles.1))
    }

    /// The frames as one batch from `id`'s host, the way `VirtualRadio` hands them over.
    mutating func batch(_ frames: [H4Frame], from id: VirtualMedium.ControllerID) -> [VirtualMedium.Delivery] {
        var out: [VirtualMedium.Delivery] = []
        var credits = VirtualMedium.CompletedPacketsTally()
        for frame in frames { medium.receive(frame, from: id, now: .zero, into: &out, credits: &credits) }
        credits.write(into: &out)
        return out
    }
}
