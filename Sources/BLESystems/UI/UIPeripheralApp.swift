import BLE
import BLEHTTP
import Foundation

/// The `/devices/ADDRESS` screen of `ble ui` and its API: connect, the GATT tree with
/// SIG names and values (as `ble gatt --json` gives it), read, write (text or hex, with or
/// without response) and subscribe, each value also pushed to the screen's event stream. Every
/// operation is a POST with a JSON body; errors come back as `{"error": "…"}` with the ATT
/// error's name, as `ble` prints it.
public actor UIPeripheralApp {
    private struct Session {
        let peripheral: Peripheral
        var database: GATTDatabaseSnapshot
        var subscriptions: [UInt16: Task<Void, Never>] = [:]
    }

    private let central: Central
    private let token: String
    private var sessions: [DeviceAddress: Session] = [:]
    /// Connections under way: a second page (or a reload) asking for the same device waits for
    /// the one attempt instead of starting another link (the actor is reentrant across awaits).
    private var connecting: [DeviceAddress: Task<Result<Session, any Error>, Never>] = [:]
    /// Subscriptions being set up, so that a second request for the same value does not start a
    /// second stream of it.
    /// Subscriptions being set up, and whether the newest request wants them on: an
    /// Unsubscribe meanwhile is carried out when the setup ends.
    private var subscribing: [SubscriptionKey: Bool] = [:]

    private struct SubscriptionKey: Hashable {
        let address: DeviceAddress
        let handle: UInt16
    }
    private var listeners: [DeviceAddress: [UInt64: AsyncStream<[UInt8]>.Continuation]] = [:]
    private var nextListener: UInt64 = 0

    /// The screen over `central`'s connections, its page carrying `token`.
    public init(central: Central, token: String) {
        self.central = central
        self.token = token
    }

    /// Disconnects everything and ends every stream.
    public func stop() async {
        // Taken first: a connect finishing while this awaits finds no attempt of its own and
        // lets its link go.
        let attempts = connecting.values, ending = sessions.values
        connecting = [:]
        sessions = [:]
        attempts.forEach { $0.cancel() }
        for s in ending {
            s.subscriptions.values.forEach { $0.cancel() }
            try? await s.peripheral.disconnect()
        }
        for (_, l) in listeners { l.values.forEach { $0.finish() } }
        listeners = [:]
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) async -> UIReply? {
        if request.method == "GET" || request.method == "HEAD" {
            if request.path.hasPrefix("/devices/"), let address = Self.address(String(request.path.dropFirst("/devices/".count))) {
                return .response(UIAssets.page(title: address.description, body: UIAssets.peripheralBody(address), token: token))
            }
            if request.path.hasPrefix("/api/peripheral-events/"), let address = Self.address(String(request.path.dropFirst("/api/peripheral-events/".count))) {
                return .events(subscribe(address))
            }
            return nil
        }
        guard request.method == "POST" else { return nil }
        let body = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
        guard let text = body["address"] as? String, let address = Self.address(text) else {
            return Self.json(.object([("error", .string("the body needs \"address\": \"XX:XX:XX:XX:XX:XX/public|random\""))]), status: .badRequest)
        }
        switch request.path {
        case "/api/connect": return await connect(address)
        case "/api/disconnect": return await disconnect(address)
        case "/api/read": return await read(address, handle: body["handle"] as? Int)
        case "/api/write":
            return await write(address, handle: body["handle"] as? Int, value: body["value"] as? String ?? "",
                               hex: body["hex"] as? Bool ?? false, withoutResponse: body["withoutResponse"] as? Bool ?? false)
        case "/api/subscribe": return await subscribe(address, handle: body["handle"] as? Int, on: body["enabled"] as? Bool ?? true)
        default: return nil
        }
    }

    /// `XX:XX:XX:XX:XX:XX/public` or `/random` (a path segment may carry it percent-encoded).
    static func address(_ text: String) -> DeviceAddress? {
        DeviceAddress(string: HTTPTarget.percentDecoded(text, plusIsSpace: false) ?? text)
    }

    static func json(_ value: JSON, status: HTTPStatus = .ok) -> UIReply {
        .response(HTTPResponse(status, headers: [("Content-Type", "application/json")], body: Array(value.text.utf8)))
    }

    static func failure(_ error: any Error) -> UIReply {
        json(.object([("error", .string("\(error)"))]))
    }

    private func connect(_ address: DeviceAddress) async -> UIReply {
        if let s = sessions[address] {
            if s.peripheral.state == .connected { return Self.json(GATTDatabaseDump.json(s.database, address: address)) }
            // The peer dropped the link since: a connect makes a new one.
            s.subscriptions.values.forEach { $0.cancel() }
            sessions[address] = nil
        }
        let attempt: Task<Result<Session, any Error>, Never>
        if let running = connecting[address] {
            attempt = running
        } else {
            let central = self.central
            attempt = Task(executorPreference: central.clock.taskExecutor) {
                do {
                    let peripheral = try await central.connect(address, timeout: .seconds(10))
                    // As `ble gatt` does: the largest ATT_MTU, so long values read in fewer requests.
                    _ = try? await peripheral.exchangeMTU(517)
                    do {
                        return .success(Session(peripheral: peripheral, database: try await peripheral.discoverDatabase(readValues: true)))
                    } catch {
                        try? await peripheral.disconnect()
                        throw error
                    }
                } catch {
                    return .failure(error)
                }
            }
            connecting[address] = attempt
        }
        let result = await attempt.value
        // The first of the waiters to resume files the session; a disconnect asked for while
        // it connected took the attempt away, and the new link is let go.
        if connecting[address] == attempt {
            connecting[address] = nil
            if case let .success(session) = result { sessions[address] = session }
        } else if case let .success(session) = result, sessions[address]?.peripheral !== session.peripheral {
            try? await session.peripheral.disconnect()
            return Self.failure(BLEError.notConnected)
        }
        switch result {
        case let .success(session): return Self.json(GATTDatabaseDump.json(session.database, address: address))
        case let .failure(error): return Self.failure(error)
        }
    }

    private func disconnect(_ address: DeviceAddress) async -> UIReply {
        connecting.removeValue(forKey: address)?.cancel()
        guard let s = sessions.removeValue(forKey: address) else { return Self.json(.object([("disconnected", .bool(true))])) }
        s.subscriptions.values.forEach { $0.cancel() }
        try? await s.peripheral.disconnect()
        return Self.json(.object([("disconnected", .bool(true))]))
    }

    private func read(_ address: DeviceAddress, handle: Int?) async -> UIReply {
        guard let s = sessions[address], let handle, let h = UInt16(exactly: handle) else { return Self.failure(BLEError.notConnected) }
        do {
            let value = try await s.peripheral.readValue(handle: h)
            return Self.json(.object([("handle", .int(handle))] + Self.valueFields(value)))
        } catch {
            return Self.failure(error)
        }
    }

    private func write(_ address: DeviceAddress, handle: Int?, value: String, hex: Bool, withoutResponse: Bool) async -> UIReply {
        guard let s = sessions[address], let handle, let h = UInt16(exactly: handle) else { return Self.failure(BLEError.notConnected) }
        let bytes: [UInt8]
        if hex {
            let digits = value.filter { !$0.isWhitespace && $0 != ":" }
            guard digits.count % 2 == 0, let parsed = Self.hexBytes(digits) else {
                return Self.json(.object([("error", .string("'\(value)' is not hex bytes"))]), status: .badRequest)
            }
            bytes = parsed
        } else {
            bytes = Array(value.utf8)
        }
        do {
            try await s.peripheral.writeValue(bytes, handle: h, type: withoutResponse ? .withoutResponse : .withResponse)
            return Self.json(.object([("handle", .int(handle)), ("written", .int(bytes.count))]))
        } catch {
            return Self.failure(error)
        }
    }

    private func subscribe(_ address: DeviceAddress, handle: Int?, on: Bool) async -> UIReply {
        guard let s = sessions[address], let handle, let h = UInt16(exactly: handle),
              let characteristic = s.database.services.flatMap(\.characteristics).first(where: { $0.characteristic.valueHandle == h })?.characteristic else {
            return Self.failure(BLEError.invalidArgument("no characteristic with value handle \(handle ?? -1)"))
        }
        let peripheral = s.peripheral
        let key = SubscriptionKey(address: address, handle: h)
        let answer = Self.json(.object([("handle", .int(handle)), ("subscribed", .bool(on))]))
        do {
            if on {
                guard s.subscriptions[h] == nil else { return answer }
                guard subscribing[key] == nil else {
                    subscribing[key] = true
                    return answer
                }
                subscribing[key] = true
                defer { subscribing[key] = nil }
                let values = await peripheral.notifications(for: characteristic)
                try await peripheral.setNotifyValue(true, for: characteristic)
                let task = Task(executorPreference: central.clock.taskExecutor) { [weak self] in
                    for await value in values { await self?.publish(address, handle: handle, value: value) }
                }
                if subscribing[key] == false {
                    // Unsubscribed while this was set up: off again.
                    task.cancel()
                    try await peripheral.setNotifyValue(false, for: characteristic)
                    return Self.json(.object([("handle", .int(handle)), ("subscribed", .bool(false))]))
                }
                // The actor served other requests meanwhile: the session is read again (a
                // disconnect may have ended it), and only this one subscription is added to it.
                guard sessions[address]?.peripheral === peripheral else {
                    task.cancel()
                    return Self.failure(BLEError.notConnected)
                }
                sessions[address]?.subscriptions[h] = task
            } else {
                if subscribing[key] != nil {
                    subscribing[key] = false
                    return answer
                }
                sessions[address]?.subscriptions.removeValue(forKey: h)?.cancel()
                try await peripheral.setNotifyValue(false, for: characteristic)
            }
            return answer
        } catch {
            return Self.failure(error)
        }
    }

    private func publish(_ address: DeviceAddress, handle: Int, value: [UInt8]) {
        let event = ServerSentEvents.event(JSON.object([("handle", .int(handle))] + Self.valueFields(value)).text, name: "value")
        for l in (listeners[address] ?? [:]).values { l.yield(event) }
    }

    private func subscribe(_ address: DeviceAddress) -> AsyncStream<[UInt8]> {
        // A slow page keeps the newest 64 values and drops older ones, never holding the radio.
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(64))
        nextListener += 1
        let id = nextListener
        listeners[address, default: [:]][id] = continuation
        continuation.onTermination = { [weak self, executor = central.clock.taskExecutor] _ in
            Task(executorPreference: executor) { await self?.unsubscribe(address, id) }
        }
        continuation.yield(ServerSentEvents.keepAlive)
        return stream
    }

    private func unsubscribe(_ address: DeviceAddress, _ id: UInt64) {
        listeners[address]?[id] = nil
    }

    /// `hex` and, when the bytes are UTF-8, `utf8` (as `ble gatt --json` gives values).
    static func valueFields(_ value: [UInt8]) -> [(String, JSON)] { valueJSON(value) }

    static func hexBytes(_ digits: String) -> [UInt8]? {
        var out: [UInt8] = []
        var chars = Array(digits)[...]
        while chars.count >= 2 {
            guard let b = UInt8(String(chars.prefix(2)), radix: 16) else { return nil }
            out.append(b)
            chars = chars.dropFirst(2)
        }
        return chars.isEmpty ? out : nil
    }
}
