import BLERuntime
import BLE
import BLEProfiles
import BLEWire

/// What the S1 central reports as it goes: the states of docs/SYSTEMS.md S1's user flow, in order
/// (poweredOn → scanning → discovered → connecting → connected → sending → reply → closed),
/// plus progress while a reply arrives. A failure ends the flow with a thrown error instead.
public enum EchoCentralEvent: Sendable {
    case poweredOn
    case scanning(service: BluetoothUUID, timeout: Duration)
    case discovered(name: String?, address: DeviceAddress, rssi: Int8?)
    case connecting(DeviceAddress, timeout: Duration)
    /// Service and characteristic found, notifications on, the write length known.
    case connected(mtu: Int, maximumWriteLength: Int)
    case sending(code: FrameCode, bytes: Int, writes: Int)
    /// Part of the reply's body is in: `received` of `total` bytes, `elapsed` since its first notification.
    case receiving(received: Int, total: Int, elapsed: Duration)
    case reply(Frame, notifications: Int, elapsed: Duration)
    case closed
}

/// The central of docs/SYSTEMS.md S1 (the phone app of the article), as one reusable function: `ble echo`
/// and `ble fetch` call it, and so can `ble demo` and the tests, with any `Central` (a controller,
/// the virtual radio).
public enum EchoCentral {
    /// How the exchange runs; the defaults are docs/SYSTEMS.md S1's.
    public struct Options: Sendable {
        /// Connect only to this address (any device advertising the service when nil).
        public var target: BDAddress?
        /// docs/SYSTEMS.md S1: scanning stops after 10 s with "not found".
        public var scanTimeout: Duration = .seconds(10)
        /// docs/SYSTEMS.md S1: connecting gives up after 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// The ATT MTU to ask for; writes carry at most ATT_MTU − 3 bytes.
        public var mtu = 517
        /// How long the peer may stay silent while its reply is due.
        public var replyTimeout: Duration = .seconds(30)
        /// The largest reply body accepted (an `I` frame holds at most 9,999,999 bytes anyway).
        public var maximumReplySize = Frame.maximumEncodableBodySize

        /// The defaults above; set the fields that differ.
        public init() {}
    }

    /// Finds an echo server, connects, sends `frame` in writes of at most ATT_MTU − 3 bytes,
    /// reassembles the notified reply and disconnects. The reply is the first `T` or `I` frame
    /// (`N` frames carry nothing and are skipped). Cancelling the task stops whichever step is
    /// running (scan, connection attempt, writes, the wait) and disconnects.
    public static func exchange(_ frame: Frame, using central: Central, options: Options = Options(),
                         report: @escaping @Sendable (EchoCentralEvent) -> Void) async throws -> Frame {
        let state = await central.state
        guard state == .poweredOn else { throw CentralFlowError.notPoweredOn(state) }
        report(.poweredOn)
        let encoded = try frame.encoded()

        report(.scanning(service: EchoProfile.service, timeout: options.scanTimeout))
        let device = try await findAdvertiser(of: EchoProfile.service, target: options.target, using: central, timeout: options.scanTimeout)
        report(.discovered(name: device.advertisement.localName, address: device.address, rssi: device.rssi))

        report(.connecting(device.address, timeout: options.connectTimeout))
        let peripheral = try await central.connect(device.address, timeout: options.connectTimeout)
        let reply: Frame
        do {
            reply = try await converse(encoded, code: frame.code, with: peripheral, clock: central.clock, options: options, report: report)
        } catch {
            await disconnectEvenIfCancelled(peripheral, clock: central.clock)
            throw error
        }
        await disconnectEvenIfCancelled(peripheral, clock: central.clock)
        report(.closed)
        return reply
    }

    /// Everything between connected and the reply, on one link.
    private static func converse(_ encoded: [UInt8], code: FrameCode, with peripheral: Peripheral, clock: any BLEClock,
                                 options: Options, report: @escaping @Sendable (EchoCentralEvent) -> Void) async throws -> Frame {
        try await exchangeMTU(options.mtu, on: peripheral)
        let stream = try await discover(EchoProfile.service, on: peripheral).characteristic(EchoProfile.stream)
        let notifications = await peripheral.notifications(for: stream)
        try await peripheral.setNotifyValue(true, for: stream)
        // One Write Request per piece (Vol 3 Part F §3.4.5.1): at most ATT_MTU − 3 bytes, and
        // never more than an attribute value may hold (§3.2.9).
        let writeLength = min(peripheral.mtu - 3, 512)
        report(.connected(mtu: peripheral.mtu, maximumWriteLength: writeLength))

        let pieces = Frame.chunks(of: encoded, maximumLength: writeLength)
        report(.sending(code: code, bytes: encoded.count, writes: pieces.count))
        for piece in pieces {
            try await peripheral.writeValue(piece, for: stream, type: .withResponse)
        }

        let watchdog = SilenceWatchdog(clock: clock, limit: options.replyTimeout, waitingFor: "reply")
        let limit = options.maximumReplySize
        let reply = try await withWatchdog(watchdog) {
            try await receive(notifications, maximumBodySize: limit, clock: clock, watchdog: watchdog, report: report)
        }
        guard let (frame, count, elapsed) = reply else {
            throw CentralFlowError.disconnected(peripheral.disconnectReason ?? .connectionTimeout, while: "waiting for the reply")
        }
        report(.reply(frame, notifications: count, elapsed: elapsed))
        return frame
    }

    /// Feeds notifications to a `FrameDecoder` until a `T` or `I` frame is complete. Nil when
    /// the stream ends first (the link went down).
    private static func receive(_ notifications: NotificationStream, maximumBodySize: Int, clock: any BLEClock,
                                watchdog: SilenceWatchdog,
                                report: @Sendable (EchoCentralEvent) -> Void) async throws -> (Frame, Int, Duration)? {
        var decoder = FrameDecoder(maximumBodySize: maximumBodySize)
        var count = 0
        var start: Duration?
        for await value in notifications {
            watchdog.touch()
            count += 1
            let began = start ?? clock.now()
            start = began
            // push(_:into:) keeps the frames completed before a bad header in the same
            // notification: a reply that came whole is the reply, whatever garbage follows it.
            var frames: [Frame] = []
            var failure: FrameError?
            do {
                try decoder.push(value, into: &frames)
            } catch {
                failure = error
            }
            if let frame = frames.first(where: { $0.code == .text || $0.code == .image }) {
                return (frame, count, clock.now() - began)
            }
            if let failure { throw CentralFlowError.malformedReply(failure) }
            if let total = decoder.announcedBodySize {
                report(.receiving(received: decoder.bufferedByteCount, total: total, elapsed: clock.now() - began))
            }
        }
        try Task.checkCancellation()
        return nil
    }
}
