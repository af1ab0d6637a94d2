import CMosquitto
import Foundation
import Synchronization

/// The thread that runs libmosquitto for one client: connect, `mosquitto_loop` until the
/// connection fails, wait, connect again. The wait starts at the configuration's
/// `reconnectDelay` and doubles after each failure up to `maximumReconnectDelay`; a successful
/// CONNACK resets it. `stop` wakes the wait at once.
///
/// libmosquitto has a loop thread of its own (`mosquitto_loop_start`), but it gives up for good
/// on some errors (a failed TLS handshake, a refused CONNACK in some versions) without telling
/// anyone; this loop never gives up until stopped and reports every failure.
final class MQTTNetworkLoop: Sendable {
    private struct LoopState {
        var started = false
        var stopping = false
        var finished = false
        var delay: Duration?
        /// When the current connection's CONNACK came.
        var connectedAt: Date?
        /// Connections in a row that ended before `stableConnection`.
        var shortLived = 0
    }

    private let state = Mutex(LoopState())
    /// Signalled on stop (to end a wait early) and when the thread ends.
    private let signal = NSCondition()

    var isStopping: Bool { state.withLock { $0.stopping } }

    func start(_ client: MQTTClient) {
        let first = state.withLock { s in
            defer { s.started = true }
            return !s.started && !s.stopping
        }
        guard first else { return }
        let thread = Thread { [self] in
            run(client)
            signal.lock()
            state.withLock { $0.finished = true }
            signal.broadcast()
            signal.unlock()
        }
        thread.name = "mqtt \(client.configuration.clientID)"
        thread.start()
    }

    /// A CONNACK: the connection's start, which `failed` measures its length from.
    func connectionStarted() { state.withLock { $0.connectedAt = Date() } }

    func stop(_ client: MQTTClient, timeout: Duration) {
        let started = state.withLock { s in
            s.stopping = true
            return s.started
        }
        _ = mosquitto_disconnect_v5(client.handle.pointer, 0, nil)
        guard started else { return }
        signal.lock()
        signal.broadcast()
        let deadline = Date().addingTimeInterval(timeout.secondsValue)
        while !state.withLock({ $0.finished }) {
            if !signal.wait(until: deadline) { break }
        }
        signal.unlock()
    }

    private func run(_ client: MQTTClient) {
        let c = client.configuration
        let handle = client.handle.pointer
        var needsConnection = true
        while !isStopping {
            if needsConnection {
                // Every attempt a whole connect (host, port, properties set again): after a failed
                // first attempt libmosquitto's reconnect may refuse with "invalid arguments".
                let rc = Self.connect(handle, c)
                if rc != 0 {
                    failed(client, "cannot connect to \(c.broker): \(MosquittoLibrary.text(rc))")
                    continue
                }
                needsConnection = false
            }
            let rc = mosquitto_loop(handle, 250, 1)
            if rc != 0, !isStopping {
                failed(client, rc == Int32(MOSQ_ERR_CONN_LOST.rawValue) || rc == Int32(MOSQ_ERR_NO_CONN.rawValue)
                       ? "connection to \(c.broker) lost" : "connection to \(c.broker) failed: \(MosquittoLibrary.text(rc))")
                needsConnection = true
            }
        }
        // Let the DISCONNECT queued by `stop` go out (bounded): the broker then keeps the will.
        for _ in 0..<8 where mosquitto_socket(handle) >= 0 {
            _ = mosquitto_loop(handle, 100, 1)
        }
    }

    /// One connection attempt. With CONNECT properties (the maximum packet size) it is
    /// `mosquitto_connect_bind_v5`, which resolves the name and connects the socket
    /// synchronously (this thread waits for the TCP handshake: up to the kernel's connect
    /// timeout for a host that drops SYNs); without, `mosquitto_connect_async`.
    private static func connect(_ handle: OpaquePointer, _ c: MQTTConfiguration) -> Int32 {
        guard let size = c.maximumPacketSize else {
            return mosquitto_connect_async(handle, c.broker.host, Int32(c.broker.port), c.keepAlive)
        }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        let rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), size)
        guard rc == 0 else { return rc }
        return mosquitto_connect_bind_v5(handle, c.broker.host, Int32(c.broker.port), c.keepAlive, nil, properties)
    }

    /// Reports the failure, waits the current delay (or until stopped) and doubles it. A
    /// connection that had lasted `stableConnection` starts again from the first delay.
    private func failed(_ client: MQTTClient, _ reason: String) {
        let c = client.configuration
        let (delay, shortLived) = state.withLock { s in
            if let since = s.connectedAt {
                if Date().timeIntervalSince(since) >= c.stableConnection.secondsValue {
                    s.delay = nil
                    s.shortLived = 0
                } else {
                    s.shortLived += 1
                }
            } else {
                // An attempt that never connected: an outage, not connections cut short.
                s.shortLived = 0
            }
            s.connectedAt = nil
            let d = s.delay ?? c.reconnectDelay
            s.delay = min(d * 2, c.maximumReconnectDelay)
            return (d, s.shortLived)
        }
        var said = reason
        if shortLived >= 2 {
            // Mosquitto 2.0 closes the socket of a client whose identifier a newer connection
            // took, without a DISCONNECT saying so: connections that keep ending at once are the
            // only sign.
            said += " (\(shortLived) connections in a row ended within \(c.stableConnection): is another client connected with the identifier '\(c.clientID)'?)"
        }
        client.didLoseConnection(said, retryIn: delay)
        signal.lock()
        let deadline = Date().addingTimeInterval(delay.secondsValue)
        while !isStopping {
            if !signal.wait(until: deadline) { break }
        }
        signal.unlock()
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var secondsValue: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
