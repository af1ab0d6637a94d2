import BLEProfiles

/// `ble-bench framing`: the S1 framed-stream decoder (`FrameDecoder`; docs/SYSTEMS.md, S1) over a
/// stream cut into 244-byte notifications (ATT_MTU 247), at two lengths ten times apart, so the
/// ratio of the times shows whether the cost is linear in the data (10× the data in 10× the
/// time; quadratic reassembly, re-copying the buffer per notification, gives ~100×).
///
/// Both lengths are well past the caches (9 MB and 90 MB), so both are measured at memory speed.
/// Two shapes: 9 MB `I` frames back to back (what `ble fetch` receives: large images, where
/// re-copying would show most), and a mix of `T`, `U` and 64 KiB `I` frames back to back
/// (frames ending and starting inside one notification). Each figure is the mean of as many passes
/// as fill 0.3 s of CPU time.
struct FramingRun {
    enum Shape: String, CaseIterable {
        case largeFrames = "9 MB I frames"
        case mixed = "mixed T/U/I frames"
    }

    static let notificationSize = 244
    /// The size of each frame of the `largeFrames` shape: near the most seven SIZE digits allow.
    static let largeFrameSize = 9_000_000

    /// The stream of `shape`, about `bytes` long, cut into notifications.
    static func notifications(_ shape: Shape, bytes: Int) throws(FrameError) -> [[UInt8]] {
        var stream: [UInt8] = []
        stream.reserveCapacity(bytes + 70_000)
        switch shape {
        case .largeFrames:
            let body = (0..<(largeFrameSize - Frame.headerLength)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let frame = try Frame.image(body).encoded()
            while stream.count < bytes { stream += frame }
        case .mixed:
            let image = Frame.image((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let pattern = try Frame.text("You said: hello there").encoded() + Frame.url("https://example.com/s1.png").encoded()
                + Frame.notify.encoded() + image.encoded()
            while stream.count < bytes { stream += pattern }
        }
        return Frame.chunks(of: stream, maximumLength: notificationSize)
    }

    /// Decodes `notifications` over and over for at least `budget` of CPU time (and at least
    /// three passes); returns the CPU seconds per pass and the frames in one. A budget well above
    /// the accounting's resolution makes short and long streams comparable.
    static func measure(_ notifications: [[UInt8]], budget: Double = 0.3) throws -> (seconds: Double, frames: Int) {
        var frames: [Frame] = []
        var count = 0
        var passes = 0
        let before = cpuSeconds()
        while passes < 3 || cpuSeconds() - before < budget {
            var decoder = FrameDecoder(maximumBodySize: Frame.maximumEncodableBodySize)
            count = 0
            for n in notifications {
                try decoder.push(n, into: &frames)
                // Each frame is handed on and dropped, as a receiver does (`ble fetch` writes it out).
                count += frames.count
                frames.removeAll(keepingCapacity: true)
            }
            guard decoder.bufferedByteCount == 0 else { throw FrameError.invalidSize([]) }
            passes += 1
        }
        return ((cpuSeconds() - before) / Double(passes), count)
    }
}

func framingCost(bytes: Int?) throws {
    let small = max(bytes ?? 9_000_000, 1)
    let large = small * 10
    print("framed-stream decoder (S1 FrameDecoder), \(FramingRun.notificationSize)-byte notifications")
    print(pad("stream", 20) + pad("bytes", 12) + pad("frames", 8) + pad("CPU s/pass", 12) + "bytes per CPU-second")
    for shape in FramingRun.Shape.allCases {
        let short = try FramingRun.notifications(shape, bytes: small)
        let long = try FramingRun.notifications(shape, bytes: large)
        _ = try FramingRun.measure(short, budget: 0.05) // warm-up
        let a = try FramingRun.measure(short)
        let b = try FramingRun.measure(long)
        for (n, m) in [(short, a), (long, b)] {
            let total = n.reduce(0) { $0 + $1.count }
            print(pad(shape.rawValue, 20) + pad("\(total)", 12) + pad("\(m.frames)", 8) + pad(String(format: "%.5f", m.seconds), 12)
                  + String(format: "%.0f", Double(total) / m.seconds))
        }
        print(String(format: "  10× the data in %.2f× the time (linear: at most 11×)", b.seconds / a.seconds))
    }
}
