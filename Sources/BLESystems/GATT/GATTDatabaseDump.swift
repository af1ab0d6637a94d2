import BLE

/// How `ble gatt` shows a peer's whole database (`Peripheral.discoverDatabase`): a tree for
/// people, or one JSON object for programs (`--json`). Values are shown as `valueText` and
/// `valueJSON` show them; a read the peer refused shows its ATT error.
public enum GATTDatabaseDump {
    /// "2A37 Heart Rate Measurement": the UUID with its assigned name when it has one.
    public static func name(_ uuid: BluetoothUUID) -> String {
        AssignedNumbers.name(for: uuid).map { "\(uuid) \($0)" } ?? uuid.description
    }

    /// The database as a tree: the peer and ATT MTU, then each service with its handle range,
    /// its includes, and its characteristics (value handle, properties, value) with their
    /// descriptors, drawn with box-drawing branches.
    public static func tree(_ db: GATTDatabaseSnapshot, address: DeviceAddress) -> String {
        var lines = ["\(address.address) (\(address.type)), ATT MTU \(db.mtu)"]
        for (si, s) in db.services.enumerated() {
            let lastService = si == db.services.count - 1
            let sp = lastService ? "└─ " : "├─ "
            let cont = lastService ? "   " : "│  "
            lines.append("\(sp)Service \(name(s.service.uuid)) [0x\(String(format4: s.service.startHandle))–0x\(String(format4: s.service.endHandle))]")
            for inc in s.includedServices {
                lines.append("\(cont)├─ Includes \(name(inc.uuid)) [0x\(String(format4: inc.serviceHandleRange.lowerBound))–0x\(String(format4: inc.serviceHandleRange.upperBound))]")
            }
            for (ci, c) in s.characteristics.enumerated() {
                let last = ci == s.characteristics.count - 1
                let cp = last ? "└─ " : "├─ "
                let ccont = last ? "   " : "│  "
                let ch = c.characteristic
                var line = "\(cont)\(cp)Characteristic \(name(ch.uuid)) [0x\(String(format4: ch.valueHandle))] \(ch.properties.names.joined(separator: ","))"
                if let v = c.value {
                    switch v {
                    case let .success(bytes): line += " = \(valueText(bytes))"
                    case let .failure(e): line += " ! \(e)"
                    }
                }
                lines.append(line)
                for (di, d) in c.descriptors.enumerated() {
                    let dp = di == c.descriptors.count - 1 ? "└─ " : "├─ "
                    var dl = "\(cont)\(ccont)\(dp)Descriptor \(name(d.descriptor.uuid)) [0x\(String(format4: d.descriptor.handle))]"
                    if let v = d.value {
                        switch v {
                        case let .success(bytes): dl += " = \(valueText(bytes))"
                        case let .failure(e): dl += " ! \(e)"
                        }
                    }
                    lines.append(dl)
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The database as one JSON object: address, address type, MTU and the services, each with
    /// its includes and characteristics, each of those with its value (or error) and descriptors.
    public static func json(_ db: GATTDatabaseSnapshot, address: DeviceAddress) -> JSON {
        .object([
            ("address", .string(address.address.description)),
            ("addressType", .string(address.type == .public ? "public" : "random")),
            ("mtu", .int(db.mtu)),
            ("services", .array(db.services.map(serviceJSON))),
        ])
    }

    private static func valueFields(_ r: Result<[UInt8], BLEError>?) -> [(String, JSON)] {
        switch r {
        case nil: return []
        case let .success(bytes)?: return [("value", .object(valueJSON(bytes)))]
        case let .failure(e)?: return [("error", .string("\(e)"))]
        }
    }

    private static func serviceJSON(_ s: GATTDatabaseSnapshot.Service) -> JSON {
        let includes: [JSON] = s.includedServices.map { i in
            .object([("uuid", .string(i.uuid.description)),
                     ("startHandle", .int(Int(i.serviceHandleRange.lowerBound))),
                     ("endHandle", .int(Int(i.serviceHandleRange.upperBound)))])
        }
        let fields: [(String, JSON)] = [
            ("uuid", .string(s.service.uuid.description)),
            ("name", .optional(AssignedNumbers.name(for: s.service.uuid))),
            ("startHandle", .int(Int(s.service.startHandle))),
            ("endHandle", .int(Int(s.service.endHandle))),
            ("includes", .array(includes)),
            ("characteristics", .array(s.characteristics.map(characteristicJSON))),
        ]
        return .object(fields)
    }

    private static func characteristicJSON(_ c: GATTDatabaseSnapshot.Characteristic) -> JSON {
        var fields: [(String, JSON)] = [
            ("uuid", .string(c.characteristic.uuid.description)),
            ("name", .optional(AssignedNumbers.name(for: c.characteristic.uuid))),
            ("handle", .int(Int(c.characteristic.valueHandle))),
            ("properties", .array(c.characteristic.properties.names.map(JSON.string))),
        ]
        fields += valueFields(c.value)
        fields.append(("descriptors", .array(c.descriptors.map(descriptorJSON))))
        return .object(fields)
    }

    private static func descriptorJSON(_ d: GATTDatabaseSnapshot.Descriptor) -> JSON {
        let fields: [(String, JSON)] = [
            ("uuid", .string(d.descriptor.uuid.description)),
            ("name", .optional(AssignedNumbers.name(for: d.descriptor.uuid))),
            ("handle", .int(Int(d.descriptor.handle))),
        ]
        return .object(fields + valueFields(d.value))
    }
}
