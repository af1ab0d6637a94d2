import BLE
import BLEWire

// `ble serve test` changes its database on request, so that robust caching (Core spec Vol 3
// Part G §2.5.2.1) shows while clients are connected: each change adds the toggled service
// after the last handle, or removes it when it is there, and every other attribute keeps its
// handle. The server then does what the spec asks of a change: a new Database Hash (§7.3), a
// Service Changed indication of the added or removed range to every client that enabled it
// (§7.1), and Database Out Of Sync to a change-unaware client that enabled robust caching.
extension TestServeProfile {
    /// The primary service a database change adds after the last handle, and the next removes.
    public static let toggledService = uuid(0x000C)
    /// The toggled service's one characteristic: readable, `toggled`.
    public static let toggledValue = uuid(0x000D)
    /// What a central writes (Write Request or Write Command) to `writeOnly` to change the
    /// database: the 9 ASCII octets `db-change`. The value is stored like any other write.
    public static let databaseChangeCommand = Array("db-change".utf8)

    static let toggledDefinition = GATTServiceDefinition(uuid: toggledService, characteristics: [
        GATTCharacteristicDefinition(uuid: toggledValue, properties: [.read], permissions: [.read], value: Array("toggled".utf8)),
    ])

    /// One database change: the service added or removed, its handle range (the one Service
    /// Changed indicated) and the Database Hash after it.
    public struct DatabaseChange: Sendable, Hashable {
        /// True when the toggled service was added, false when it was removed.
        public var added: Bool
        /// The handles of the toggled service.
        public var range: ClosedRange<UInt16>
        /// The Database Hash after the change, as clients read it (nil if it failed to compute).
        public var hash: [UInt8]?
    }

    /// Queues a database change (see the extension's comment); `run` makes it.
    public func requestDatabaseChange(_ trigger: DatabaseChangeTrigger) -> Bool {
        databaseChanges.request(trigger)
        return true
    }

    /// Adds the toggled service after the last handle when it is absent, removes it when it is
    /// there. `PeripheralManager` indicates Service Changed and makes the clients change-unaware.
    static func toggleService(on manager: PeripheralManager) async throws -> DatabaseChange {
        if let present = await manager.services.first(where: { $0.uuid == toggledService }) {
            try await manager.remove(present)
            return DatabaseChange(added: false, range: present.range, hash: await manager.databaseHash)
        }
        let handles = try await manager.add(toggledDefinition)
        return DatabaseChange(added: true, range: handles.range, hash: await manager.databaseHash)
    }

    /// Makes the requested changes one after another, each logged, until cancelled; requests
    /// dropped because too many waited are logged before the next change.
    func changeDatabase(on manager: PeripheralManager, log: ServeLog) async {
        for await trigger in databaseChanges.requests {
            let dropped = databaseChanges.takeDropped()
            if dropped > 0 {
                log.line("databaseChangesDropped", [("count", .int(dropped)), ("limit", .int(DatabaseChangeRequests.limit))],
                         text: "\(dropped) database change request(s) dropped: at most \(DatabaseChangeRequests.limit) wait")
            }
            do {
                log.databaseChanged(try await Self.toggleService(on: manager), trigger: trigger)
            } catch {
                log.line("databaseChanged", log.fields(trigger) + [("error", .string("\(error)"))],
                         text: "database not changed (\(ServeLog.text(trigger))): \(error)")
            }
        }
    }
}

extension ServeLog {
    /// The line of one database change of `ble serve test`.
    func databaseChanged(_ change: TestServeProfile.DatabaseChange, trigger: DatabaseChangeTrigger) {
        let range = "0x\(String(format4: change.range.lowerBound))-0x\(String(format4: change.range.upperBound))"
        let hash = change.hash?.hexString
        line("databaseChanged", fields(trigger) + [("added", .bool(change.added)), ("service", .string("\(TestServeProfile.toggledService)")),
                                                  ("start", .int(Int(change.range.lowerBound))), ("end", .int(Int(change.range.upperBound))),
                                                  ("hash", .optional(hash))],
             text: "database changed (\(Self.text(trigger))): \(change.added ? "added" : "removed") service \(TestServeProfile.toggledService) \(range), hash \(hash ?? "?")")
    }

    /// The fields that say what asked for a database change.
    func fields(_ trigger: DatabaseChangeTrigger) -> [(String, JSON)] {
        switch trigger {
        case let .write(c): [("trigger", .string("write"))] + central(c)
        case let .signal(name): [("trigger", .string("signal")), ("signal", .string(name))]
        }
    }

    /// What asked for a database change, for people: "write from ADDRESS" or the signal's name.
    static func text(_ trigger: DatabaseChangeTrigger) -> String {
        switch trigger {
        case let .write(c): "write from \(c.address)"
        case let .signal(name): name
        }
    }
}
