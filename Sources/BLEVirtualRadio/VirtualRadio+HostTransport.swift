import BLEHCI
import BLERuntime
import BLEWire

/// Attaching an outside host (a `ble --hci tcp:...` process, a Bumble host) to the radio over any
/// `HCITransport` whose `incoming` are the host's frames: the `ble radio --listen` server,
/// the rootcanal model of one TCP connection = one controller on a shared medium.
///
/// Built only on the radio's public surface: the new controller's in-process host end is
/// bridged frame by frame to `hostTransport`, in both directions, in order.
extension VirtualRadio {
    /// Why an attached host's session ended.
    public enum HostSessionEnd: Sendable {
        /// The host closed its connection (or the transport was closed).
        case hostClosed
        /// The host's transport failed (I/O error, lost H4 framing); the error says how.
        case hostFailed(any Error)
        /// The radio shut down.
        case radioClosed
    }

    /// Adds a controller with public address `address` and relays between it and
    /// `hostTransport` until either side ends. Returns when the session is over, after the
    /// controller is removed from the medium, so a departed host leaves no advertiser, scanner
    /// or link behind (its peers see their links time out, as with a device switched off), and
    /// after `hostTransport` is closed.
    public nonisolated func serve(hostTransport: any HCITransport, address: BDAddress,
                                  configuration: VirtualControllerConfiguration? = nil) async -> HostSessionEnd {
        let device = await addDevice(address: address, configuration: configuration)
        let controller = device.transport
        let end = await withTaskGroup(of: HostSessionEnd?.self) { group -> HostSessionEnd in
            // Host -> controller: commands and ACL data.
            group.addTask {
                do {
                    for try await frame in hostTransport.incoming {
                        do { try await controller.send(frame) } catch { return .radioClosed }
                    }
                    return .hostClosed
                } catch let error as TransportError where error.kind == .peerClosed {
                    return .hostClosed
                } catch {
                    return .hostFailed(error)
                }
            }
            // Controller -> host: events and ACL data.
            group.addTask {
                do {
                    for try await frame in controller.incoming {
                        // A failed write means the host is gone; the other task sees the same.
                        do { try await hostTransport.send(frame) } catch { return nil }
                    }
                } catch {}
                return .radioClosed
            }
            var result: HostSessionEnd = .radioClosed
            if let first = await group.next(), let first { result = first }
            else if let second = await group.next(), let second { result = second }
            group.cancelAll()
            return result
        }
        await remove(device.id)
        await controller.close()
        await hostTransport.close()
        return end
    }
}
