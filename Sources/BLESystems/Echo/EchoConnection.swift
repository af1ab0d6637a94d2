import BLE
import BLEProfiles
import BLEWire

/// What one central's reply task works through, in the order that central's writes produced it.
/// Each item carries the link's ATT_MTU at that moment, which sizes the reply's notifications.
enum EchoWork: Sendable {
    case frame(Frame, mtu: Int)
    case malformed(FrameError, mtu: Int)
}

/// One central's side of the echo service (docs/SYSTEMS.md S1): the incremental decoder over its writes
/// and the queue its answers come from. Owned by the profile's event loop, which feeds it in the
/// order the writes arrived.
final class EchoConnection {
    let central: ConnectedCentral
    /// ATT_MTU of this link: 23 until an Exchange MTU (Vol 3 Part F §3.4.2).
    var mtu = 23
    private var decoder: FrameDecoder
    private let work: AsyncStream<EchoWork>.Continuation

    init(central: ConnectedCentral, work: AsyncStream<EchoWork>.Continuation, maximumBodySize: Int) {
        self.central = central
        self.work = work
        decoder = FrameDecoder(maximumBodySize: maximumBodySize)
    }

    /// Takes one write's bytes. Frames it completes are queued for answers, in order with an
    /// error answer for each bad header:
    /// - a frame refused for what its header announces (a body over the limit, an `N` with a
    ///   body) is answered once, and then exactly its body is skipped, however many writes it
    ///   spans, so none of its bytes is read as a header (an image body may hold anything,
    ///   `U` frames included) and the frame after it is served;
    /// - a header out of sync (unknown code, a SIZE that is not digits) resets the decoder,
    ///   dropping the rest of this write, so the central's next write starts a new header (as
    ///   the Python reference server does).
    func receive(_ bytes: [UInt8]) {
        var outputs: [FrameDecoder.Output] = []
        do {
            try decoder.push(bytes, skippingRefused: &outputs)
            queue(outputs)
        } catch {
            queue(outputs)
            work.yield(.malformed(error, mtu: mtu))
            decoder.reset()
        }
    }

    private func queue(_ outputs: [FrameDecoder.Output]) {
        for output in outputs {
            switch output {
            case let .frame(frame): work.yield(.frame(frame, mtu: mtu))
            case let .refused(error): work.yield(.malformed(error, mtu: mtu))
            }
        }
    }

    /// No more work: the central left or the server stops. Answers already queued still go out
    /// if the link is up.
    func close() {
        work.finish()
    }

    // MARK: Answers

    /// Answers each item in order (docs/SYSTEMS.md S1): `T` → `T` "You said: …"; `U` → the fetched
    /// bytes as `I`, or `T` with the error; a malformed header → `T` with the error. `N` and `I`
    /// frames from a central need no answer.
    static func answer(_ work: AsyncStream<EchoWork>, for central: ConnectedCentral, handle: UInt16,
                       manager: PeripheralManager, fetcher: ResourceFetcher, log: ServeLog) async {
        for await item in work {
            let reply: Frame
            let mtu: Int
            switch item {
            case let .frame(frame, linkMTU):
                mtu = linkMTU
                logFrame(frame, from: central, log: log)
                switch frame.code {
                case .text:
                    reply = .text(EchoProfile.reply(to: String(decoding: frame.body, as: UTF8.self)))
                case .url:
                    // The read or download happens outside the world's clock: in virtual time
                    // the clock holds still meanwhile, so the central's reply timeout does not
                    // run out during a file read that takes no time on the radio.
                    reply = await manager.clock.whileOutsideWork {
                        await fetch(String(decoding: frame.body, as: UTF8.self), for: central, fetcher: fetcher, log: log)
                    }
                case .notify, .image:
                    continue
                }
            case let .malformed(error, linkMTU):
                mtu = linkMTU
                log.line("frameError", log.central(central) + [("message", .string(error.description))],
                         text: "frame error: \(central.address) \(error)")
                reply = .text("error: \(error)")
            }
            do {
                try await send(reply, to: central, handle: handle, mtu: mtu, manager: manager, log: log)
            } catch {
                return  // cancelled: the server is stopping
            }
        }
    }

    private static func logFrame(_ frame: Frame, from central: ConnectedCentral, log: ServeLog) {
        var fields = log.central(central) + [("code", .string(frame.code.description)), ("size", .int(frame.body.count))]
        var text = "frame: \(central.address) \(frame.code) \(frame.body.count) bytes"
        if frame.code == .text || frame.code == .url {
            let body = String(decoding: frame.body, as: UTF8.self)
            fields.append(("text", .string(body)))
            text += " \"\(body)\""
        }
        log.line("frame", fields, text: text)
    }

    private static func fetch(_ url: String, for central: ConnectedCentral, fetcher: ResourceFetcher, log: ServeLog) async -> Frame {
        log.line("fetch", log.central(central) + [("url", .string(url))], text: "fetch: \(central.address) \(url)")
        do {
            let bytes = try await fetcher.fetch(url)
            log.line("fetched", log.central(central) + [("url", .string(url)), ("size", .int(bytes.count))],
                     text: "fetched: \(central.address) \(url) \(bytes.count) bytes")
            return .image(bytes)
        } catch {
            log.line("fetchError", log.central(central) + [("url", .string(url)), ("message", .string(error.description))],
                     text: "fetch failed: \(central.address) \(error)")
            return .text("error: \(error)")
        }
    }

    /// Sends `reply` to this central alone, in notifications of at most ATT_MTU − 3 bytes (Vol 3
    /// Part F §3.4.7.1) and never more than an attribute value (512, §3.2.9). When the link's
    /// queue is full it waits for room (`updateValueWaiting`, CoreBluetooth's
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`) instead of dropping anything.
    private static func send(_ reply: Frame, to central: ConnectedCentral, handle: UInt16, mtu: Int,
                             manager: PeripheralManager, log: ServeLog) async throws {
        let encoded: [UInt8]
        do {
            encoded = try reply.encoded()
        } catch {
            return try await send(.text("error: \(error)"), to: central, handle: handle, mtu: mtu, manager: manager, log: log)
        }
        let size = min(mtu - 3, 512)
        let pieces = Frame.chunks(of: encoded, maximumLength: size)
        for (sent, piece) in pieces.enumerated() {
            guard try await manager.updateValueWaiting(piece, forHandle: handle, onSubscribedCentrals: [central]) == 1 else {
                log.line("replyDropped", log.central(central) + [("code", .string(reply.code.description)), ("sent", .int(sent)), ("notifications", .int(pieces.count))],
                         text: "reply not delivered: \(central.address) is not subscribed or has left (\(sent) of \(pieces.count) notifications sent)")
                return
            }
        }
        var fields = log.central(central) + [("code", .string(reply.code.description)), ("size", .int(reply.body.count)),
                                             ("notifications", .int(pieces.count)), ("maxNotification", .int(size))]
        var text = "reply: \(central.address) \(reply.code) \(reply.body.count) bytes in \(pieces.count) notification\(pieces.count == 1 ? "" : "s")"
        if reply.code == .text {
            let body = String(decoding: reply.body, as: UTF8.self)
            fields.append(("text", .string(body)))
            text += " \"\(body)\""
        }
        log.line("reply", fields, text: text)
    }
}
