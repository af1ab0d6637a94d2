import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEWire
import Foundation
import XCTest
import BLESystems

/// `ble echo`'s central against a server that misbehaves after its reply.
final class EchoCentralReplyTests: XCTestCase {
    /// A stand-in echo server that answers every write with `notification` in one notification.
    static func fakeServer(notifying notification: [UInt8], in world: VirtualWorld) async throws -> (PeripheralManager, Task<Void, Never>) {
        let (manager, _) = try await world.addPeripheralManager(name: "Echo")
        let handles = try await manager.add(GATTServiceDefinition(uuid: EchoProfile.service, characteristics: [
            GATTCharacteristicDefinition(uuid: EchoProfile.stream, properties: [.write, .notify], permissions: [.write], value: nil),
        ]))
        let handle = try XCTUnwrap(handles.valueHandle(for: EchoProfile.stream))
        let events = await manager.events
        let (data, response) = EchoServeProfile().advertisement(name: "Echo")
        try await manager.startAdvertising(data, scanResponse: response)
        let server = Task(executorPreference: world.clock.taskExecutor) {
            for await event in events {
                guard case let .write(request) = event else { continue }
                await manager.respond(to: request, with: .success(()))
                _ = try? await manager.updateValueWaiting(notification, forHandle: handle, onSubscribedCentrals: [request.central])
            }
        }
        return (manager, server)
    }

    /// A whole `T` frame and a stray byte in one notification: the reply is the `T` frame.
    func testAReplyCompletedBeforeABadHeaderInTheSameNotificationIsKept() async throws {
        let reply = try await VirtualWorld.run { world in
            let (manager, server) = try await Self.fakeServer(notifying: Array("T0000002okX".utf8), in: world)
            let (central, _) = try await world.addCentral()
            let reply = try await EchoCentral.exchange(.text("hi"), using: central) { _ in }
            server.cancel()
            await central.close()
            await manager.close()
            return reply
        }
        XCTAssertEqual(reply, .text("ok"))
    }

    /// A bad header with no reply before it is still a malformed reply.
    func testABadHeaderWithoutAReplyIsAMalformedReply() async throws {
        let error = try await VirtualWorld.run { world -> CentralFlowError? in
            let (manager, server) = try await Self.fakeServer(notifying: Array("N0000000X".utf8), in: world)
            let (central, _) = try await world.addCentral()
            var error: CentralFlowError?
            do { _ = try await EchoCentral.exchange(.text("hi"), using: central) { _ in } } catch let e as CentralFlowError { error = e }
            server.cancel()
            await central.close()
            await manager.close()
            return error
        }
        XCTAssertEqual(error, .malformedReply(.unknownCode(0x58)))
    }
}
