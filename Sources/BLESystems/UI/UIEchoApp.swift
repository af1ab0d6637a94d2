import BLE
import BLEHTTP
import BLEProfiles
import Foundation
import Synchronization

/// The `/echo` screen of `ble ui` (docs/SYSTEMS.md S1): a text box whose message goes to
/// the echo server and whose reply comes back, and a URL the server fetches and answers with
/// an image, shown in the page with a progress bar while it arrives. Each message is one
/// `EchoCentral.exchange` (scan for the service, connect, write, reassemble the notified reply,
/// disconnect), as `ble echo` and `ble fetch` run it; one at a time. The exchange's states and
/// progress reach every open page over `GET /api/echo-events`; the POST that started it is
/// answered with the reply. Received images are served back at `GET /api/echo/image/N`, in
/// the type their first bytes say.
public final class UIEchoApp: Sendable {
    private struct State {
        var busy = false
        /// Set by `stop`: no exchange starts, and no page's stream opens, after it.
        var stopped = false
        /// The exchange under way, which `stop` cancels.
        var running: Task<Frame, any Error>?
        var viewers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        /// The latest exchange's events, for a page opened later (the newest progress only).
        var history: [[UInt8]] = []
        var images: [(id: Int, bytes: [UInt8], type: String?)] = []
        var nextImage = 0
        var nextViewer: UInt64 = 0
    }

    /// Images kept for the pages (each may be up to 9,999,999 bytes, an `I` frame's limit).
    static let keptImages = 2

    private let central: Central
    private let token: String
    private let suggestedURL: String?
    private let options: EchoCentral.Options
    private let state = Mutex(State())

    /// The screen over `central`, its page carrying `token`; the URL box starts with
    /// `suggestedURL` (one the server can fetch: `ble ui --hci virtual`'s demo image), and every
    /// exchange runs with `options`.
    public init(central: Central, token: String, suggestedURL: String? = nil, options: EchoCentral.Options = EchoCentral.Options()) {
        self.central = central
        self.token = token
        self.suggestedURL = suggestedURL
        self.options = options
    }

    /// Answers this screen's routes; nil for a path it does not serve.
    public func handle(_ request: HTTPRequest) async -> UIReply? {
        if request.method == "POST" {
            switch request.path {
            case "/api/echo", "/api/echo/fetch":
                let body = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
                let fetch = request.path == "/api/echo/fetch"
                guard let text = body[fetch ? "url" : "text"] as? String, !text.isEmpty else {
                    return UIPeripheralApp.json(.object([("error", .string(fetch ? "the body needs \"url\": \"http://…\"" : "the body needs \"text\": \"…\""))]),
                                                status: .badRequest)
                }
                return await exchange(fetch ? .url(text) : .forMessage(text))
            default:
                return nil
            }
        }
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        switch request.path {
        case "/echo":
            return .response(UIAssets.page(title: "Echo", body: UIEchoAssets.body(suggestedURL: suggestedURL), token: token, scripts: ["echo.js"]))
        case "/api/echo-events":
            return .events(watch())
        default:
            guard let number = UIAccelApp.suffix(request.path, after: "/api/echo/image/") else { return nil }
            return image(Int(number))
        }
    }

    /// Cancels the exchange under way (which disconnects) and ends every page's stream.
    public func stop() {
        let (viewers, running) = state.withLock { s -> ([AsyncStream<[UInt8]>.Continuation], Task<Frame, any Error>?) in
            defer { s.viewers = [:]; s.running = nil; s.stopped = true }
            return (Array(s.viewers.values), s.running)
        }
        running?.cancel()
        viewers.forEach { $0.finish() }
    }

    // MARK: The exchange

    /// What one exchange's events leave for its end: the reply as the POST answers it (JSON text), and the
    /// last percent of progress shown.
    final class Run: Sendable {
        let answer = Mutex<String?>(nil)
        let shown = Mutex(-1)
    }

    /// Runs one exchange of `frame` and answers with its reply, or the error that ended it.
    private func exchange(_ frame: Frame) async -> UIReply {
        let claimed = state.withLock { s -> Bool? in
            guard !s.stopped else { return nil }
            guard !s.busy else { return false }
            s.busy = true
            s.history = []
            return true
        }
        guard let claimed else {
            return UIPeripheralApp.json(.object([("error", .string("the server is stopping"))]), status: .serviceUnavailable)
        }
        guard claimed else {
            return UIPeripheralApp.json(.object([("error", .string("a message is under way: wait for its reply"))]), status: HTTPStatus(409, "Conflict"))
        }
        let request = frame.code.description
        publish(Self.event("start", [("code", .string(request)), ("text", .optional(frame.text))]))
        let run = Run()
        let (central, options) = (self.central, self.options)
        let task = Task(executorPreference: central.clock.taskExecutor) {
            try await EchoCentral.exchange(frame, using: central, options: options) { event in
                if case let .reply(reply, notifications, elapsed) = event {
                    let json = self.replyJSON(reply, request: request, notifications: notifications, elapsed: elapsed)
                    let text = json.text
                    run.answer.withLock { $0 = text }
                    self.publish(Self.event(json))
                } else if let json = Self.json(event, run: run) {
                    self.publish(Self.event(json))
                }
            }
        }
        // A stop since the claim found nothing to cancel: this one is cancelled here.
        let stopped = state.withLock { s -> Bool in
            if !s.stopped { s.running = task }
            return s.stopped
        }
        if stopped { task.cancel() }
        let result = await task.result
        state.withLock { s in
            s.busy = false
            s.running = nil
        }
        switch result {
        case .success:
            guard let text = run.answer.withLock({ $0 }) else { return UIPeripheralApp.json(.object([("error", .string("no reply"))])) }
            return .response(HTTPResponse(.ok, headers: [("Content-Type", "application/json")], body: Array(text.utf8)))
        case let .failure(error):
            let message = "\(error)"
            publish(Self.event(.object([("type", .string("error")), ("message", .string(message))])))
            return UIPeripheralApp.json(.object([("error", .string(message))]))
        }
    }

    /// The flow's event as the pages get it; nil for one they do not need (progress that moved
    /// less than a percent since the last shown).
    static func json(_ event: EchoCentralEvent, run: Run) -> JSON? {
        func object(_ type: String, _ fields: [(String, JSON)] = []) -> JSON { .object([("type", .string(type))] + fields) }
        switch event {
        case .poweredOn:
            return object("poweredOn")
        case let .scanning(service, timeout):
            return object("scanning", [("service", .string(service.description)), ("timeoutSeconds", .int(Int(timeout.components.seconds)))])
        case let .discovered(name, address, rssi):
            return object("discovered", [("name", .optional(name)), ("address", .string("\(address)")), ("rssi", rssi.map { .int(Int($0)) } ?? .null)])
        case let .connecting(address, _):
            return object("connecting", [("address", .string("\(address)"))])
        case let .connected(mtu, length):
            return object("connected", [("mtu", .int(mtu)), ("maximumWriteLength", .int(length))])
        case let .sending(code, bytes, writes):
            return object("sending", [("code", .string(code.description)), ("bytes", .int(bytes)), ("writes", .int(writes))])
        case let .receiving(received, total, _):
            let percent = total > 0 ? min(100, received * 100 / total) : 0
            let due = run.shown.withLock { p -> Bool in
                guard percent > p else { return false }
                p = percent
                return true
            }
            return due ? object("receiving", [("received", .int(received)), ("total", .int(total))]) : nil
        case .reply:
            return nil
        case .closed:
            return object("closed")
        }
    }

    /// The reply as the pages and the POST get it: the text, or where the image is served.
    private func replyJSON(_ reply: Frame, request: String, notifications: Int, elapsed: Duration) -> JSON {
        var fields: [(String, JSON)] = [("type", .string("reply")), ("request", .string(request)), ("code", .string(reply.code.description)),
                                        ("size", .int(reply.body.count)), ("notifications", .int(notifications)),
                                        ("seconds", .number(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))]
        if reply.code == .image {
            let type = Self.imageType(reply.body)
            let id = state.withLock { s -> Int in
                s.nextImage += 1
                s.images.append((s.nextImage, reply.body, type))
                if s.images.count > Self.keptImages { s.images.removeFirst(s.images.count - Self.keptImages) }
                return s.nextImage
            }
            fields += [("image", .string("/api/echo/image/\(id)")), ("contentType", .optional(type))]
        } else {
            fields.append(("text", .string(reply.text ?? reply.body.hexString)))
        }
        return .object(fields)
    }

    // MARK: Images

    /// The media type a browser shows the bytes as, from their signature; nil when none of
    /// the formats a browser draws (PNG, JPEG, GIF, WebP, BMP, SVG) starts so.
    public static func imageType(_ b: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + prefix.count && Array(b[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("BM".utf8)), b.count >= 26 { return "image/bmp" }
        // SVG is text: an XML declaration or the root element first, the root within the start.
        let head = String(decoding: b.prefix(1024), as: UTF8.self).drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        if head.hasPrefix("<svg") || (head.hasPrefix("<?xml") && head.contains("<svg")) { return "image/svg+xml" }
        return nil
    }

    private func image(_ id: Int?) -> UIReply {
        guard let id, let image = state.withLock({ $0.images.first { $0.id == id } }) else {
            return .response(.text(.notFound, "no such image (only the last \(Self.keptImages) are kept)\n"))
        }
        // Served on this origin but written by whoever the peripheral fetched from: a sandbox,
        // so an SVG opened by itself runs nothing (in an <img> it never does), and bytes of no
        // known image type are only ever a download.
        var headers: [(name: String, value: String)] = [("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'")]
        if let type = image.type {
            headers.append(("Content-Type", type))
        } else {
            headers += [("Content-Type", "application/octet-stream"), ("Content-Disposition", "attachment; filename=\"echo-image-\(id).bin\"")]
        }
        return .response(HTTPResponse(.ok, headers: headers, body: image.bytes))
    }

    // MARK: Pages' streams

    static func event(_ json: JSON) -> [UInt8] {
        ServerSentEvents.event(json.text, name: "echo")
    }

    static func event(_ type: String, _ fields: [(String, JSON)]) -> [UInt8] {
        event(.object([("type", .string(type))] + fields))
    }

    /// A new page's stream: the latest exchange so far, then every event.
    private func watch() -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { s -> UInt64? in
            guard !s.stopped else { return nil }
            s.history.forEach { continuation.yield($0) }
            s.nextViewer += 1
            s.viewers[s.nextViewer] = continuation
            return s.nextViewer
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.viewers.removeValue(forKey: id) } }
        continuation.yield(ServerSentEvents.keepAlive)
        return stream
    }

    private func publish(_ event: [UInt8]) {
        let viewers = state.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            // Progress replaces the progress before it: a page opened later needs only the newest.
            if let last = s.history.last, String(decoding: last, as: UTF8.self).contains("\"type\":\"receiving\""),
               String(decoding: event, as: UTF8.self).contains("\"type\":\"receiving\"") {
                s.history.removeLast()
            }
            if s.history.count < 64 { s.history.append(event) }
            return Array(s.viewers.values)
        }
        viewers.forEach { $0.yield(event) }
    }
}
