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

    func resetDelay() { state.withLock { $0.delay = nil } }

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
        var firstAttempt = true
        while !isStopping {
            if needsConnection {
                let rc = firstAttempt
                    ? mosquitto_connect_async(handle, c.broker.host, Int32(c.broker.port), c.keepAlive)
                    : mosquitto_reconnect_async(handle)
                firstAttempt = false
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

    /// Reports the failure, waits the current delay (or until stopped) and doubles it.
    private func failed(_ client: MQTTClient, _ reason: String) {
        let c = client.configuration
        let delay = state.withLock { s in
            let d = s.delay ?? c.reconnectDelay
            s.delay = min(d * 2, c.maximumReconnectDelay)
            return d
        }
        client.didLoseConnection(reason, retryIn: delay)
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
