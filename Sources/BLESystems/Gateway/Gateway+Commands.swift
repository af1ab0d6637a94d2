import BLE
import BLEGateway
import BLEMQTT
import Foundation

extension Gateway {
    /// The longest Correlation Data a reply carries back (MQTT allows 65,535 octets).
    static let maximumCorrelationData = 1024

    /// A message on the command topic: decoded and checked, then carried out in a task of its
    /// own (at most `maximumConcurrentCommands` at once), and answered on `reply` or on the
    /// MQTT 5 Response Topic with its Correlation Data. Anything refused is answered at once
    /// and changes nothing.
    func received(_ m: MQTTMessage) {
        // An empty message is how a retained command is cleared from the broker: nothing to do.
        guard m.topic == topics.commands, !m.payload.isEmpty else { return }
        statistics.commands += 1
        var replyTopic = topics.replies
        var correlation: [UInt8]?
        if let requested = m.responseTopic {
            guard topics.allowsResponseTopic(requested) else {
                return refuse(GatewayCommandDecoder.identifier(in: m.payload), code: "bad-response-topic",
                              "the response topic must lie under \(topics.replyRoot)/, without + or #, in at most 256 octets",
                              topic: replyTopic, correlation: nil)
            }
            replyTopic = requested
        }
        if let data = m.correlationData {
            guard data.count <= Self.maximumCorrelationData else {
                return refuse(GatewayCommandDecoder.identifier(in: m.payload), code: "bad-correlation-data",
                              "correlation data longer than \(Self.maximumCorrelationData) octets", topic: replyTopic, correlation: nil)
            }
            correlation = data
        }
        // A retained command would be carried out again by every gateway that subscribes later.
        guard !m.retain else {
            return refuse(GatewayCommandDecoder.identifier(in: m.payload), code: "retained-command",
                          "commands may not be retained messages", topic: replyTopic, correlation: correlation)
        }
        let request: GatewayRequest
        switch GatewayCommandDecoder.decode(m.payload) {
        case let .failure(error):
            return refuse(GatewayCommandDecoder.identifier(in: m.payload), code: error.code, error.description,
                          topic: replyTopic, correlation: correlation)
        case let .success(r):
            request = r
        }
        guard runningCommands < configuration.maximumConcurrentCommands else {
            return refuse(request.id, code: "busy", "\(runningCommands) commands are under way; try again",
                          topic: replyTopic, correlation: correlation)
        }
        runningCommands += 1
        Task {
            let result = await self.perform(request.operation)
            self.finish(request, result, topic: replyTopic, correlation: correlation)
        }
    }

    private func refuse(_ id: String?, code: String, _ message: String, topic: String, correlation: [UInt8]?) {
        statistics.refused += 1
        limitedLog("refused a command: \(message)")
        publish(topic, GatewayPayloads.failure(id: id, code: code, message: message), kind: .reply, correlationData: correlation)
    }

    private func finish(_ request: GatewayRequest, _ result: Result<[(String, JSON)], GatewayFailure>, topic: String, correlation: [UInt8]?) {
        runningCommands -= 1
        let json: JSON
        switch result {
        case let .success(fields):
            json = GatewayPayloads.success(id: request.id, fields)
        case let .failure(f):
            statistics.failed += 1
            limitedLog("\(request.operation.name) \(request.operation.device) failed: \(f.message)")
            json = GatewayPayloads.failure(id: request.id, code: f.code, message: f.message)
        }
        publish(topic, json, kind: .reply, correlationData: correlation)
    }

    /// Carries out `operation`, or gives up at `commandDeadline` (cancelling it), so no peer,
    /// however slow, holds a command slot longer than that.
    private func perform(_ operation: GatewayOperation) async -> Result<[(String, JSON)], GatewayFailure> {
        // The link this command may use is busy until it ends (the idle closer leaves it), and
        // its idle time starts again then.
        let address = operation.device.address
        linkUsers[address, default: 0] += 1
        defer {
            linkUsers[address, default: 1] -= 1
            if linkUsers[address] == 0 { linkUsers[address] = nil }
            if links[address] != nil { linkLastUsed[address] = central.clock.now() }
        }
        let outcome = GatewayCommandOutcome()
        let deadline = configuration.commandDeadline
        let clock = central.clock
        return await withCheckedContinuation { continuation in
            outcome.wait(continuation)
            let work = Task {
                do {
                    outcome.finish(.success(try await self.carryOut(operation)))
                } catch {
                    outcome.finish(.failure(GatewayFailure.from(error)))
                }
            }
            let timer = Task {
                try? await clock.sleep(for: deadline)
                guard !Task.isCancelled else { return }
                work.cancel()
                outcome.finish(.failure(GatewayFailure(code: "timeout", "\(operation.name) was not done within \(deadline)")))
            }
            outcome.onFinish { timer.cancel() }
        }
    }

    private func carryOut(_ operation: GatewayOperation) async throws -> [(String, JSON)] {
        switch operation {
        case let .connect(d):
            let p = try await peripheral(for: d)
            return [("address", .string(p.address.description)), ("mtu", .int(p.mtu))]
        case let .disconnect(d):
            guard let p = links[d.address] else { throw GatewayFailure(code: "not-connected", "\(d) is not connected to this gateway") }
            endSubscriptions(of: d.address)
            links[d.address] = nil
            linkLastUsed[d.address] = nil
            do {
                try await p.disconnect()
            } catch {
                // Still up: kept, so it stays counted and can be disconnected again.
                if p.state == .connected, links[d.address] == nil { links[d.address] = p }
                throw error
            }
            return [("address", .string(p.address.description))]
        case let .gatt(d):
            let p = try await peripheral(for: d)
            let db = try await p.discoverDatabase(readValues: true)
            guard case let .object(fields) = GATTDatabaseDump.json(db, address: p.address) else { return [] }
            return fields
        case let .read(d, c):
            let p = try await peripheral(for: d)
            let ch = try await locate(c, on: p)
            guard ch.properties.contains(.read) else {
                throw GatewayFailure(code: "not-readable", "\(c) on \(d) cannot be read (its properties: \(ch.properties.names.joined(separator: ",")))")
            }
            let read = try await p.readValueAndCharacteristic(for: ch)
            return valueFields(read.value, read.characteristic)
        case let .write(d, c, value, withResponse):
            let p = try await peripheral(for: d)
            let ch = try await locate(c, on: p)
            let needed: CharacteristicProperties = withResponse ? .write : .writeWithoutResponse
            guard ch.properties.contains(needed) else {
                throw GatewayFailure(code: "not-writable", "\(c) on \(d) cannot be written \(withResponse ? "with" : "without") response (its properties: \(ch.properties.names.joined(separator: ",")))")
            }
            let type: WriteType = withResponse ? .withResponse : .withoutResponse
            if !withResponse, value.count > p.maximumWriteValueLength(for: type) {
                throw GatewayFailure(code: "value-too-long", "a write without response carries at most \(p.maximumWriteValueLength(for: type)) octets on this link")
            }
            let written = try await p.writeValue(value, for: ch, type: type)
            return [("characteristic", .string(written.uuid.description)), ("handle", .int(Int(written.valueHandle)))]
        case let .subscribe(d, c):
            return try await subscribe(d, c)
        case let .unsubscribe(d, c):
            let key = GatewaySubscriptionKey(address: d.address, characteristic: c.characteristic)
            guard let subscription = subscriptions.removeValue(forKey: key) else {
                throw GatewayFailure(code: "not-subscribed", "\(c) of \(d) is not subscribed")
            }
            subscription.task.cancel()
            // A subscribe of the same characteristic meanwhile would have its CCCD written off
            // by this one's late write: it waits (`busy`) until this is done.
            unsubscribing.insert(key)
            defer { unsubscribing.remove(key) }
            if let p = links[d.address], let ch = try? await locate(c, on: p) {
                _ = try? await p.disableUpdates(for: ch)
            }
            return [("characteristic", .string(c.characteristic.description))]
        }
    }

    private func valueFields(_ value: [UInt8], _ c: GATTCharacteristic) -> [(String, JSON)] {
        [("characteristic", .string(c.uuid.description)), ("handle", .int(Int(c.valueHandle)))]
            + valueJSON(value) + GatewayPayloads.decoded(value, of: c.uuid)
    }

    /// The link to `d`: the one kept, one being made, or a new connection (with the MTU
    /// exchanged) to a device this gateway has heard.
    func peripheral(for d: GatewayDevice) async throws -> Peripheral {
        if let p = links[d.address], p.state == .connected { return p }
        if let attempt = connecting[d.address] { return try await attempt.value }
        guard let heard = heardDevice(named: d) else { throw GatewayFailure.unknownDevice(d) }
        guard heard.connectable else {
            throw GatewayFailure(code: "not-connectable", "\(d) advertises as not connectable")
        }
        guard links.count + connecting.count < configuration.maximumLinks else {
            throw GatewayFailure(code: "too-many-links", "this gateway keeps at most \(configuration.maximumLinks) links; disconnect one first")
        }
        guard connecting.count < configuration.maximumQueuedConnections else {
            throw GatewayFailure(code: "busy", "\(connecting.count) connection attempts are queued; try again")
        }
        let address = heard.address
        let central = self.central
        let timeout = configuration.connectionTimeout
        let mtu = configuration.mtu
        let attempt = Task {
            // The central makes one connection at a time: attempts to several devices queue.
            await self.connectionTurn()
            defer { self.endConnectionTurn() }
            let p = try await central.connect(address, timeout: timeout)
            // A peer that refuses the exchange keeps the default of 23.
            _ = try? await p.exchangeMTU(mtu)
            return p
        }
        connecting[d.address] = attempt
        defer { connecting[d.address] = nil }
        let p = try await attempt.value
        links[d.address] = p
        linkLastUsed[d.address] = central.clock.now()
        configuration.log("connected to \(p.address)")
        let key = d.address
        Task {
            for await state in p.stateUpdates {
                if case .disconnected = state { break }
            }
            self.linkEnded(key, p)
        }
        return p
    }

    /// Waits until no other connection attempt of this gateway is under way (FIFO).
    func connectionTurn() async {
        guard connectionAttemptUnderWay else {
            connectionAttemptUnderWay = true
            return
        }
        await withCheckedContinuation { connectionWaiters.append($0) }
    }

    /// Hands the turn to the next waiting attempt, if any.
    func endConnectionTurn() {
        if connectionWaiters.isEmpty {
            connectionAttemptUnderWay = false
        } else {
            connectionWaiters.removeFirst().resume()
        }
    }

    /// Closes links that served no command for `linkIdleTimeout`, carry no subscription and
    /// serve no command now. They leave `links` at once; the disconnections run in a task of
    /// their own, so the periodic work does not wait for them.
    func closeIdleLinks(now: Duration) {
        let idle = links.filter { address, _ in
            linkUsers[address] == nil
                && !subscriptions.keys.contains { $0.address == address } && !subscribing.contains { $0.address == address }
                && now - (linkLastUsed[address] ?? now) >= configuration.linkIdleTimeout
        }
        for (address, p) in idle {
            links[address] = nil
            linkLastUsed[address] = nil
            configuration.log("closing the idle link to \(p.address)")
            Task {
                do {
                    try await p.disconnect()
                } catch {
                    // Still up: kept, and tried again after another idle period.
                    if p.state == .connected, self.links[address] == nil {
                        self.links[address] = p
                        self.linkLastUsed[address] = self.central.clock.now()
                    }
                }
            }
        }
    }

    private func linkEnded(_ key: BDAddress, _ p: Peripheral) {
        guard links[key] === p else { return }
        links[key] = nil
        linkLastUsed[key] = nil
        endSubscriptions(of: key)
        configuration.log("\(p.address) disconnected")
    }

    private func endSubscriptions(of address: BDAddress) {
        for (key, subscription) in subscriptions where key.address == address {
            subscription.task.cancel()
            subscriptions[key] = nil
        }
    }

    /// The characteristic a command names: in the named service, or the one of that UUID on
    /// the device (`ambiguous-characteristic` when several services have one).
    func locate(_ c: GatewayCharacteristic, on p: Peripheral) async throws -> GATTCharacteristic {
        var found: [(GATTService, GATTCharacteristic)] = []
        let services = try await p.discoverServices(c.service.map { [$0] })
        for s in services where c.service == nil || s.uuid == c.service {
            for ch in try await p.discoverCharacteristics([c.characteristic], for: s) where ch.uuid == c.characteristic {
                found.append((s, ch))
            }
        }
        guard let first = found.first else {
            throw GatewayFailure(code: "no-characteristic", "\(p.address) has no characteristic \(c)")
        }
        guard found.count == 1 else {
            let names = found.map { $0.0.uuid.description }.joined(separator: ", ")
            throw GatewayFailure(code: "ambiguous-characteristic", "\(c.characteristic) is in several services (\(names)): name one with \"service\"")
        }
        return first.1
    }
}
