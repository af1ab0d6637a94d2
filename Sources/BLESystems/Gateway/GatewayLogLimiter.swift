/// At most `perWindow` log lines each `window`; the rest counted and told with the next line.
struct GatewayLogLimiter: Sendable {
    var window: Duration = .seconds(10)
    var perWindow = 20
    private var windowStart: Duration?
    private var lines = 0
    private var held = 0

    /// Whether a line may go now, and how many were held back before it.
    mutating func allow(now: Duration) -> (Bool, Int) {
        if let start = windowStart, now - start < window {
            guard lines < perWindow else {
                held += 1
                return (false, 0)
            }
        } else {
            windowStart = now
            lines = 0
        }
        lines += 1
        defer { held = 0 }
        return (true, held)
    }
}
