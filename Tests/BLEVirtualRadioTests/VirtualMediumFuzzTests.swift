import BLEHCI
import BLEVirtualRadio
import BLEWire
import XCTest

/// Random host input to three controllers (commands with random parameters, ACL on any
/// handle, garbage frames, moves, resets, connections with random parameters): the medium never
/// traps, never loops, and time only moves forward.
final class VirtualMediumFuzzTests: XCTestCase {
    func testRandomHostInputNeverTraps() {
        let ops: [HCIOpcode] = [.reset, .setEventMask, .leSetEventMask, .leSetRandomAddress, .leSetAdvertisingParameters,
            .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable, .leSetScanParameters, .leSetScanEnable,
            .leCreateConnection, .leCreateConnectionCancel, .disconnect, .leConnectionUpdate, .leSetDataLength,
            .leReadPHY, .leSetDefaultPHY, .leSetPHY, .leRemoteConnectionParameterRequestReply,
            .leRemoteConnectionParameterRequestNegativeReply, .leEnableEncryption, .leLongTermKeyRequestReply,
            .leLongTermKeyRequestNegativeReply, .leAddDeviceToFilterAcceptList, .leClearFilterAcceptList, .leEncrypt, .leRand,
            .leWriteSuggestedDefaultDataLength, .readBufferSize, .leReadBufferSizeV2]
        for seed in 0..<10 {
            var rng = SplitMix64(seed: UInt64(seed))
            var medium = VirtualMedium()
            medium.airTimeModel = seed % 2 == 0
            let ids = (0..<3).map { medium.add(VirtualController(address: BDAddress(rawValue: 0xA0 + UInt64($0)))) }
            var now = Duration.zero
            for id in ids {
                _ = medium.receive(.setEventMask(0x3FFF_FFFF_FFFF_FFFF), from: id, now: now)
                _ = medium.receive(.leSetEventMask(0xFFFF), from: id, now: now)
                _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: id, now: now)
                _ = medium.receive(.leSetScanEnable(enable: true), from: id, now: now)
            }
            var links = 0
            func count(_ d: [VirtualMedium.Delivery]) {
                for x in d { if case let .event(.le(.connectionComplete(c))) = x.packet, c.status == .success { links += 1 } }
            }
            for _ in 0..<10_000 {
                if rng.next() % 100 == 0 {
                    let a = ids[Int(rng.next() % 3)], b = ids[Int(rng.next() % 3)]
                    _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 32, intervalMax: 32), from: a, now: now)
                    _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: a, now: now)
                    _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(BDAddress(rawValue: 0xA0 + UInt64(a.rawValue)), type: .public),
                        connectionIntervalMin: UInt16(rng.next() % 20), connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: UInt16(rng.next() % 500)), from: b, now: now)
                    count(medium.advance(to: now))
                }
                let id = ids[Int(rng.next() % 3)]
                switch rng.next() % 10 {
                case 0...4:
                    let op = ops[Int(rng.next() % UInt64(ops.count))]
                    var params = (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    if op == .leCreateConnection, params.count >= 25 {
                        params[5] = 0; params[6...11] = [0xA0 + UInt8(rng.next() % 3), 0, 0, 0, 0, 0][...]; params[12] = 0
                    }
                    _ = medium.receive(HCICommand(opcode: op, parameters: params), from: id, now: now)
                case 5...7:
                    let data = (0..<Int(rng.next() % 600)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    let p = ACLPacket(handle: 0x40 + UInt16(rng.next() % 4), boundary: .firstNonFlushable, data: data)
                    count(medium.receive(p.h4Frame, from: id, now: now))
                case 8:
                    let bytes = (0..<Int(rng.next() % 12)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    _ = medium.receive(H4Frame(type: rng.next() % 2 == 0 ? .command : .acl, payload: bytes), from: id, now: now)
                default:
                    now += .microseconds(Int64(rng.next() % 200_000))
                    count(medium.advance(to: now))
                    if rng.next() % 50 == 0 { medium.move(id, to: .init(x: Double(rng.next() % 1000), y: 0), now: now) }
                    if rng.next() % 200 == 0 { _ = medium.resetController(id, now: now) }
                }
            }
            XCTAssertGreaterThan(links, 0, "seed \(seed) made no connection: the input did not reach the link states")
        }
    }
}
