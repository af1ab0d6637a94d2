import BLEHTTP

/// The HTTP request parser `ble ui` serves with (RFC 9112): arbitrary bytes, fed whole and in
/// pieces cut where the input says. It must never trap; both feedings must agree; no request
/// may exceed the limits; and a request it accepts, written out again, must parse to the same.
enum HTTPFuzzTargets {
    static func httpRequest(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let cut = Int(input.u8())
        let body = input.rest()
        var limits = HTTPRequestParser.Limits()
        limits.requestLine = 256
        limits.headerBlock = 512
        limits.headerCount = 8
        limits.body = 256
        var whole = HTTPRequestParser(limits: limits)
        let all = try? whole.push(body)
        var pieces = HTTPRequestParser(limits: limits)
        var split: [HTTPRequest]? = []
        let step = max(1, cut)
        var i = 0
        while i < body.count, split != nil {
            let chunk = Array(body[i..<min(body.count, i + step)])
            if let got = try? pieces.push(chunk) { split? += got } else { split = nil }
            i += step
        }
        if let all, let split {
            FuzzCheck.require(all == split, "HTTP parse differs between whole and \(step)-byte pieces: \(fuzzHex(body))")
        }
        for r in all ?? [] {
            FuzzCheck.require(r.body.count <= limits.body && r.headers.count <= limits.headerCount, "HTTP request over the limits")
            var text = "\(r.method) \(r.target) HTTP/1.\(r.minorVersion)\r\n"
            for (n, v) in r.headers { text += "\(n): \(v)\r\n" }
            text += "\r\n"
            var again = HTTPRequestParser(limits: limits)
            let reparsed = try? again.push(Array(text.utf8) + r.body)
            FuzzCheck.require(reparsed?.first?.path == r.path && reparsed?.first?.method == r.method,
                              "HTTP request does not survive re-encoding: \(fuzzHex(body))")
        }
    }

    static let seeds: [[UInt8]] = [
        [3] + Array("GET /devices?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nCookie: ble_ui_token=abc\r\n\r\n".utf8),
        [7] + Array("POST /api/write HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nX-BLE-Token: t\r\n\r\nabcdGET / HTTP/1.0\n\n".utf8),
        [1] + Array("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".utf8),
    ]
}
