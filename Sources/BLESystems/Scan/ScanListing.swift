import BLE

/// `ble scan`'s flow over a running scan: a live `ScanTable` redrawn on a terminal, or a line
/// (`ScanLines.text` or `.json`) each time a device is first heard or its advertisement changes.
public enum ScanListing {
    /// How often the live table is redrawn (also while nothing is heard, so ages count up and
    /// quiet devices drop off).
    public static let redrawInterval: Duration = .milliseconds(250)

    /// Shows `scan` until it ends (its timeout, or the consumer's cancellation), then, live, draws
    /// the table a last time. `clock` is the host's (ages and redraws are on it); `write` gets
    /// finished text, newlines included: stdout, flushed, by default.
    public static func run(_ scan: some AsyncSequence<ScannedDevice, any Error> & Sendable, mode: OutputMode, clock: any BLEClock,
                           write: @Sendable (String) -> Void = { text in
                               print(text, terminator: "")
                               flushOutput()
                           }) async throws {
        if mode == .live {
            var table = ScanTable()
            var lastDraw = Duration.zero
            for try await update in ticking(scan, every: redrawInterval, on: clock) {
                if case let .element(device) = update { table.update(device) }
                let now = clock.now()
                if now - lastDraw >= redrawInterval {
                    lastDraw = now
                    write(table.render(now: now))
                }
            }
            write(table.render(now: clock.now()))
            return
        }
        var printed: [DeviceAddress: AdvertisingData] = [:]
        for try await device in scan {
            let now = clock.now()
            guard printed[device.address] != device.advertisement else { continue }
            printed[device.address] = device.advertisement
            write((mode == .json ? ScanLines.json(device).text : ScanLines.text(device, now: now)) + "\n")
        }
    }
}
