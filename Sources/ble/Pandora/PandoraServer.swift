import BLE
import BLESystems
import BLETransport

/// Serves the control protocol (docs/PANDORA.md) on one connection from the gRPC bridge: each
/// request line runs as its own task, answered with `result`, a stream of `item`s and `end`,
/// or `error` with a gRPC status; `cancel` ends a running one.
actor PandoraServer {
    let stack: PandoraStack
    private let connection: TCPByteConnection
    private var running: [Int: Task<Void, Never>] = [:]
    /// The bridge's first line: a connection that does not start with it is closed.
    private let token: String
    private var authenticated = false
    private let onAuthenticated: @Sendable () -> Void

    init(stack: PandoraStack, connection: TCPByteConnection, token: String, onAuthenticated: @escaping @Sendable () -> Void) {
        self.stack = stack
        self.connection = connection
        self.token = token
        self.onAuthenticated = onAuthenticated
    }

    /// Reads request lines until the bridge hangs up; then cancels what still runs. False when
    /// the connection was not the bridge's: its first line was not the token, or did not come
    /// within 10 s.
    func serve() async -> Bool {
        let connection = self.connection
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            if !self.authenticated { await connection.close() }
        }
        defer { watchdog.cancel() }
        var buffer: [UInt8] = []
        do {
            for try await chunk in connection.incoming {
                buffer += chunk
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Array(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    if !authenticated {
                        guard String(decoding: line, as: UTF8.self) == token else {
                            await connection.close()
                            return false
                        }
                        authenticated = true
                        onAuthenticated()
                    } else if !line.isEmpty {
                        accept(line)
                    }
                }
                if buffer.count > ControlRequest.maximumLineLength {
                    standardError("ble pandora: a control line over \(ControlRequest.maximumLineLength) bytes; closing the bridge's connection")
                    break
                }
            }
        } catch {
            standardError("ble pandora: the bridge's control connection ended: \(error)")
        }
        guard authenticated else {
            await connection.close()
            return false
        }
        for task in running.values { task.cancel() }
        running = [:]
        await connection.close()
        return true
    }

    private func accept(_ line: [UInt8]) {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            // A line that names its request still gets an answer, so its caller does not wait.
            if let id = ControlRequest.leadingID(line), running[id] == nil {
                send(id, [("error", Self.error(error))])
            } else {
                standardError("ble pandora: ignoring a control line: \(error)")
            }
            return
        }
        switch request.op {
        case "cancel":
            if let target = try? request.int("target", in: 0...Int.max) { running[target]?.cancel() }
            return
        case "pairingAnswer":
            answerPairing(request)
            return
        default:
            break
        }
        guard running[request.id] == nil else {
            send(request.id, [("error", Self.error(ControlError(.alreadyExists, "request \(request.id) is running")))])
            return
        }
        running[request.id] = Task { await self.run(request) }
    }

    private func run(_ request: ControlRequest) async {
        let id = request.id
        do {
            let result = try await dispatch(request)
            if Task.isCancelled {
                // A stream ends quietly when its task is cancelled: the request still ends as cancelled.
                send(id, [("error", Self.error(ControlError(.cancelled, "cancelled")))])
            } else if let result {
                send(id, [("result", result)])
            } else {
                send(id, [("end", .bool(true))])
            }
        } catch {
            send(id, [("error", Self.error(Self.controlError(error)))])
        }
        running[id] = nil
    }

    /// Runs one request: a unary one returns its result, a streaming one emits items and
    /// returns nil when it ends.
    private func dispatch(_ request: ControlRequest) async throws -> JSON? {
        let emit: @Sendable (JSON) async -> Void = { [weak self] item in await self?.send(request.id, [("item", item)]) }
        let empty = JSON.object([])
        switch request.op {
        case "factoryReset", "reset":
            try await stack.reset(factory: request.op == "factoryReset")
            return empty
        case "readLocalAddress":
            return try await stack.localAddress()
        case "scan":
            try await stack.scan(request, emit: emit)
            return nil
        case "advertise":
            try await stack.advertise(request, emit: emit)
            return nil
        case "connectLE":
            return try await stack.connect(request)
        case "disconnect":
            try await stack.disconnect(try request.connection())
            return empty
        case "waitDisconnection":
            try await stack.waitUntilDown(try request.connection())
            return empty
        case "getConnectionParameters":
            return try await stack.connectionParameters(try request.connection())
        case "waitConnectionUpdate":
            return try await stack.waitConnectionUpdate(try request.connection())
        case "onPairing":
            try await streamPairing(emit: emit)
            return nil
        case "secure":
            return try await stack.secure(try request.connection(), level: try request.int("level", in: 1...4)).json
        case "waitSecurity":
            return try await stack.waitSecurity(try request.connection(), level: try request.int("level", in: 1...4)).json
        case "isBonded":
            return .object([("bonded", .bool(try await stack.isBonded(request)))])
        case "deleteBond":
            try await stack.deleteBond(request)
            return empty
        default:
            if let l2cap = try await stack.l2cap(request, emit: emit) { return l2cap }
            throw ControlError(.unimplemented, "\(request.op) is not a call this server knows")
        }
    }

    /// OnPairing: the pairing agent's questions, until the client ends the stream.
    private func streamPairing(emit: @escaping @Sendable (JSON) async -> Void) async throws {
        guard let (token, questions) = stack.relay.listen() else {
            throw ControlError(.failedPrecondition, "OnPairing is already streaming")
        }
        await withTaskCancellationHandler {
            for await q in questions {
                var fields: [(String, JSON)] = [("event", .int(q.event)), ("kind", .string(q.kind.rawValue))]
                if let v = q.value { fields.append(("value", .int(Int(v)))) }
                if let c = q.connection { fields.append(("connection", .int(Int(c)))) }
                await emit(.object(fields))
            }
        } onCancel: {
            self.stack.relay.stopListening(token)
        }
        stack.relay.stopListening(token)
    }

    /// An answer to an `OnPairing` question. One whose value is not an answer (a passkey beyond
    /// six digits, a confirmation that is not a boolean) is no answer: the pairing fails at once
    /// rather than wait for the SMP timeout.
    private func answerPairing(_ request: ControlRequest) {
        let event: Int
        do {
            event = try request.int("event", in: 0...Int.max)
        } catch {
            standardError("ble pandora: ignoring a pairing answer: \(error)")
            return
        }
        var answer = PairingAnswer.none
        do {
            if request.arguments["confirm"] != nil {
                answer = .confirm(try request.bool("confirm"))
            } else if let passkey = request.arguments["passkey"], passkey != .null {
                answer = .passkey(UInt32(try request.int("passkey", in: 0...999_999)))
            }
        } catch {
            standardError("ble pandora: pairing event \(event) gets no answer: \(error)")
        }
        if !stack.relay.answer(event, answer) {
            standardError("ble pandora: an answer to pairing event \(event), which nobody waits for")
        }
    }

    private func send(_ id: Int, _ fields: [(String, JSON)]) {
        let line = JSON.object([("id", .int(id))] + fields).text + "\n"
        let connection = self.connection
        // Lines go out in the order they were made: one writer at a time, in actor order.
        pending.append(Array(line.utf8))
        guard !writing else { return }
        writing = true
        Task {
            while let next = self.nextPending() {
                do { try await connection.send(next) } catch { break }
            }
        }
    }

    private var pending = FIFOBuffer<[UInt8]>()
    private var writing = false

    private func nextPending() -> [UInt8]? {
        guard let next = pending.removeFirst() else {
            writing = false
            return nil
        }
        return next
    }

    static func error(_ e: ControlError) -> JSON {
        .object([("code", .string(e.status.rawValue)), ("message", .string(e.message))])
    }

    /// Any error as the status a client reads: ours as they are, the stack's by kind.
    static func controlError(_ error: any Error) -> ControlError {
        switch error {
        case let e as ControlError: return e
        case is CancellationError: return ControlError(.cancelled, "cancelled")
        case let e as BLEError:
            switch e {
            case .timeout: return ControlError(.deadlineExceeded, "\(e)")
            case .invalidArgument: return ControlError(.invalidArgument, "\(e)")
            case .unsupported: return ControlError(.unimplemented, "\(e)")
            case .busy: return ControlError(.failedPrecondition, "\(e)")
            case .disconnected, .connectionFailed: return ControlError(.aborted, "\(e)")
            default: return ControlError(.internal, "\(e)")
            }
        default: return ControlError(.internal, "\(error)")
        }
    }
}
