import BLE
import BLEGateway
import Foundation

/// What a gateway counts besides its outbound queue's counts.
struct GatewayStatistics: Sendable {
    /// Successful connections to the broker (the first, and each reconnection).
    var connections = 0
    var reports = 0
    var commands = 0
    var refused = 0
    var failed = 0
    var notifications = 0
    /// PUBACKs with a reason code of 0x80 or more (not authorized, say).
    var brokerRefused = 0
    /// Messages the client refused for a reason other than a lost connection.
    var publishFailed = 0
}

extension Gateway {
    /// `status/stats`: counts since the gateway started.
    func statisticsPayload() -> JSON {
        let c = outbox.counts
        return .object([
            ("gateway", .string(topics.name)),
            ("uptime", .int(Int(Date().timeIntervalSince(started)))),
            ("brokerConnections", .int(statistics.connections)),
            ("reconnections", .int(max(0, statistics.connections - 1))),
            ("published", .int(c.published)),
            ("acknowledged", .int(c.acknowledged)),
            ("inFlight", .int(outbox.inFlightCount)),
            ("queued", .object([("control", .int(outbox.queuedControl)), ("replies", .int(outbox.queuedReplies)),
                                ("notifications", .int(outbox.queuedNotifications)), ("advertisements", .int(outbox.queuedAdvertisements))])),
            ("dropped", .object([("control", .int(c.controlDropped)), ("replies", .int(c.repliesDropped)),
                                 ("notifications", .int(c.notificationsDropped)), ("advertisements", .int(c.advertisementsDropped)),
                                 ("commands", .int(intake.dropped)), ("publishFailed", .int(statistics.publishFailed))])),
            ("brokerRefused", .int(statistics.brokerRefused)),
            ("advertisementsSuperseded", .int(c.advertisementsSuperseded)),
            ("reports", .int(statistics.reports)),
            ("devices", .int(heard.count)),
            ("links", .int(links.count)),
            ("subscriptions", .int(subscriptions.count)),
            ("notifications", .int(statistics.notifications)),
            ("commands", .object([("received", .int(statistics.commands)), ("refused", .int(statistics.refused)),
                                  ("failed", .int(statistics.failed))])),
            ("time", .int(GatewayPayloads.milliseconds(Date()))),
        ])
    }
}
