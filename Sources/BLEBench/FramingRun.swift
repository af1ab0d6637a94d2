import BLEProfiles

/// `ble-bench framing`: the S1 framed-stream decoder (`FrameDecoder`, SEEDS.md S1) over a
/// stream cut into 244-byte notifications (ATT_MTU 247), at two lengths ten times apart, so the
/// ratio of the times shows whether the cost is linear in the data (10× the data in 10× the
/// time; quadratic reassembly, re-copying the buffer per notification, gives ~100×).
///
/// Two shapes: one `I` frame as long as the stream (what `ble fetch` receives: a large image,
/// where re-copying would show most), and a mix of `T`, `U` and 64 KiB `I` frames back to back
/// (frames ending and starting inside one notification).
struct FramingRun {
    enum Shape: String, CaseIterable {
        case oneFrame = "one I frame"
        case mixed = "mixed T/U/I frames"
    }

    static let notificationSize = 244

    /// The stream of `shape`, about `bytes` long, cut into notifications.
    static func notifications(_ shape: Shape, bytes: Int) throws(FrameError) -> [[UInt8]] {
        var stream: [UInt8] = []
        stream.reserveCapacity(bytes + 70_000)
        switch shape {
        case .oneFrame:
            let body = (0..<max(0, bytes - Frame.headerLength)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            stream = try Frame.image(body).encoded()
        case .mixed:
            let image = Frame.image((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let pattern = try Frame.text("You said: hello there").encoded() + Frame.url("https://example.com/s1.png").encoded()
                + Frame.notify.encoded() + image.encoded()
            while stream.count < bytes { stream += pattern }
        }
        return Frame.chunks(of: stream, maximumLength: notificationSize)
    }

    /// Decodes `notifications` `repeats` times; returns the CPU seconds of one pass and the
    /// frames of the last, checked against the stream's length.
    static func measure(_ notifications: [[UInt8]], repeats: Int) throws -> (seconds: Double, frames: Int) {
        var frames: [Frame] = []
        let before = cpuSeconds()
        for _ in 0..<repeats {
            var decoder = FrameDecoder(maximumBodySize: Frame.maximumEncodableBodySize)
            frames.removeAll(keepingCapacity: true)
            for n in notifications { try decoder.push(n, into: &frames) }
            guard decoder.bufferedByteCount == 0 else { throw FrameError.invalidSize([]) }
        }
        return ((cpuSeconds() - before) / Double(repeats), frames.count)
    }
}

func framingCost(bytes: Int?) throws {
    let small = min(bytes ?? 900_000, Frame.maximumEncodableBodySize / 10)
    let large = small * 10
    print("framed-stream decoder (SEEDS.md S1 FrameDecoder), \(FramingRun.notificationSize)-byte notifications")
    print(pad("stream", 20) + pad("bytes", 12) + pad("frames", 8) + pad("CPU s", 10) + "bytes per CPU-second")
    for shape in FramingRun.Shape.allCases {
        let short = try FramingRun.notifications(shape, bytes: small)
        let long = try FramingRun.notifications(shape, bytes: large)
        _ = try FramingRun.measure(short, repeats: 2) // warm-up
        let a = try FramingRun.measure(short, repeats: 20)
        let b = try FramingRun.measure(long, repeats: 2)
        for (n, m) in [(short, a), (long, b)] {
            let total = n.reduce(0) { $0 + $1.count }
            print(pad(shape.rawValue, 20) + pad("\(total)", 12) + pad("\(m.frames)", 8) + pad(String(format: "%.4f", m.seconds), 10)
                  + String(format: "%.0f", Double(total) / m.seconds))
        }
        print(String(format: "  10× the data in %.2f× the time (linear: at most 11×)", b.seconds / a.seconds))
    }
}
