extension UIBrokerModel {
    /// The whole picture as `GET /api/broker` gives it (without the broker connection's
    /// fields, which the app adds): gateways by name, devices strongest first, each with every
    /// gateway's report, the strongest marked, and its newest values.
    public func overviewFields() -> [(String, JSON)] {
        [
            ("prefix", .string(prefix)),
            ("gateways", .array(gateways.map(json))),
            ("devices", .array(devices.map(json))),
            ("ignored", .int(ignored)),
            ("lastIgnored", .optional(lastIgnored)),
        ]
    }

    /// A gateway as the overview lists it, with how many devices it reports.
    func json(_ g: Gateway) -> JSON {
        let heard = deviceTable.values.reduce(0) { $0 + ($1.sightings[g.name] == nil ? 0 : 1) }
        return .object([
            ("name", .string(g.name)),
            ("status", .string(g.online.map { $0 ? "online" : "offline" } ?? "unknown")),
            ("stats", g.statistics.map { .object($0.map { ($0.0, .int($0.1)) }) } ?? .null),
            ("devices", .int(heard)),
        ])
    }

    /// A device as the overview lists it: every gateway's report (strongest first, the one
    /// commands go to marked) and its newest values.
    func json(_ d: Device) -> JSON {
        let best = strongest(d)
        let sightings = d.sightings.sorted { a, b in
            let (ra, rb) = (a.value.rssi ?? -128, b.value.rssi ?? -128)
            return ra != rb ? ra > rb : a.key < b.key
        }
        let values = valueTable[d.address]
        return .object([
            ("address", .string(d.address)),
            ("addressType", .string(d.addressType)),
            ("name", .optional(d.name)),
            ("connectable", d.connectable.map { .bool($0) } ?? .null),
            ("serviceUUIDs", .array(d.serviceUUIDs.map { .string($0) })),
            ("strongest", .optional(best)),
            ("gateways", .array(sightings.map { name, s in
                .object([("gateway", .string(name)), ("rssi", s.rssi.map { .int($0) } ?? .null), ("time", s.time.map { .int($0) } ?? .null),
                         ("status", .string(gatewayTable[name]?.online.map { $0 ? "online" : "offline" } ?? "unknown")),
                         ("strongest", .bool(name == best))])
            })),
            ("heartRate", values?.heartRates.last.map { .object(Self.fields($0)) } ?? .null),
            ("accelerometer", values?.accelerations.last.map { .object(Self.fields($0)) } ?? .null),
        ])
    }

    /// A measurement as the heart-rate screen's `measurement` event has it (`t` in seconds).
    static func fields(_ m: HeartRate) -> [(String, JSON)] {
        let contact = m.contact.map { $0 ? "detected" : "notDetected" } ?? "notSupported"
        return [("t", .number(Double(m.time) / 1000)), ("bpm", .int(m.bpm)), ("contact", .string(contact)),
                ("energyKJ", m.energyKJ.map { .int($0) } ?? .null), ("rrIntervals", .array(m.rrIntervals.map { .number($0) })),
                ("gateway", .string(m.gateway))]
    }

    /// A sample as the accelerometer screen's `sample` event has it (`t` in seconds).
    static func fields(_ a: Acceleration) -> [(String, JSON)] {
        [("t", .number(Double(a.time) / 1000)), ("x", .number(a.x)), ("y", .number(a.y)), ("z", .number(a.z)), ("gateway", .string(a.gateway))]
    }
}
