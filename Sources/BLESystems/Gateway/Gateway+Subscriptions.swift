import BLE
import BLEGateway
import Foundation

extension Gateway {
    /// Subscribes to `c` on `d` and publishes each value on `dev/ADDRESS/CHARACTERISTIC` at
    /// QoS 1, followed across Service Changed; the subscription lasts until `unsubscribe`,
    /// `disconnect` or the link's end.
    func subscribe(_ d: GatewayDevice, _ c: GatewayCharacteristic) async throws -> [(String, JSON)] {
        let key = GatewaySubscriptionKey(address: d.address, characteristic: c.characteristic)
        if subscriptions[key] != nil || subscribing.contains(key) {
            return [("characteristic", .string(c.characteristic.description)), ("already", .bool(true))]
        }
        guard !unsubscribing.contains(key) else {
            throw GatewayFailure(code: "busy", "\(c) of \(d) is being unsubscribed; try again")
        }
        // Taken before the first await: a second command for it meanwhile answers `already`.
        subscribing.insert(key)
        defer { subscribing.remove(key) }
        let p = try await peripheral(for: d)
        let ch = try await locate(c, on: p)
        guard !ch.properties.isDisjoint(with: [.notify, .indicate]) else {
            throw GatewayFailure(code: "not-subscribable", "\(c) on \(d) neither notifies nor indicates")
        }
        let fields: [(String, JSON)] = [("characteristic", .string(ch.uuid.description)), ("topic", .string(topics.value(d.address, ch.uuid)))]
        let updates = await p.follow(ch) { [self] peripheral in try await self.locate(c, on: peripheral) }
        _ = try await p.enableUpdates(for: ch)
        let topic = topics.value(d.address, ch.uuid)
        let address = p.address
        let uuid = ch.uuid
        // The link may have ended (or been closed) during the awaits: then nothing is registered.
        guard links[d.address] === p, p.state == .connected else {
            throw GatewayFailure(code: "disconnected", "\(d) disconnected while subscribing")
        }
        nextSubscriptionID += 1
        let id = nextSubscriptionID
        let task = Task {
            do {
                for try await update in updates {
                    guard case let .value(v) = update else { continue }
                    self.received(v, of: uuid, at: address, topic: topic)
                }
                // The values end with the link.
                self.subscriptionFailed(key, id: id, BLEError.notConnected)
            } catch {
                self.subscriptionFailed(key, id: id, error)
            }
        }
        subscriptions[key] = GatewaySubscription(id: id, task: task)
        return fields
    }

    private func received(_ value: [UInt8], of uuid: BluetoothUUID, at address: DeviceAddress, topic: String) {
        statistics.notifications += 1
        publish(topic, GatewayPayloads.value(value, of: uuid, at: address, gateway: topics.name, time: Date()), kind: .notification)
    }

    /// The subscription `id` ended with `error`; forgotten unless a newer one took its key.
    private func subscriptionFailed(_ key: GatewaySubscriptionKey, id: Int, _ error: any Error) {
        guard subscriptions[key]?.id == id else { return }
        subscriptions[key] = nil
        configuration.log("subscription to \(key.characteristic) of \(key.address) ended: \(error)")
    }
}

/// A subscription a command made: the task that publishes its values, and an identifier that
/// tells it from a later one of the same characteristic.
struct GatewaySubscription: Sendable {
    var id: Int
    var task: Task<Void, Never>
}

/// One subscription a command made: a device's characteristic.
struct GatewaySubscriptionKey: Hashable, Sendable {
    var address: BDAddress
    var characteristic: BluetoothUUID
}
