/// Names for Bluetooth SIG assigned numbers: GATT service, characteristic and descriptor UUIDs,
/// company identifiers (Core spec Vol 3 Part C §11, Manufacturer Specific Data, and LMP/LL version
/// reports) and GAP appearance values (Core Supplement Part A §1.12).
///
/// The tables live in `AssignedNumbers+{UUIDs,Companies,Appearance}.generated.swift`, produced by
/// `scripts/generate-assigned-numbers.py` from Nordic Semiconductor's bluetooth-numbers-database. They are stored as
/// tab-separated text and parsed into dictionaries the first time a lookup needs them (a `static
/// let` is initialised lazily and exactly once, thread-safely), which keeps compile time small and
/// costs nothing for programs that never ask for a name.
///
/// The UUID tables also hold well-known vendor 128-bit UUIDs (Nordic UART, Apple ANCS, ...); lookups
/// compare full 128-bit values, so `180D`, `0000180D` and `0000180d-0000-1000-8000-00805f9b34fb`
/// find the same entry.
public enum AssignedNumbers {
    /// The name of a GATT service, e.g. `180D` → "Heart Rate".
    public static func serviceName(_ uuid: BluetoothUUID) -> String? { services[uuid] }

    /// The name of a GATT characteristic, e.g. `2A37` → "Heart Rate Measurement".
    public static func characteristicName(_ uuid: BluetoothUUID) -> String? { characteristics[uuid] }

    /// The name of a GATT descriptor, e.g. `2902` → "Client Characteristic Configuration".
    public static func descriptorName(_ uuid: BluetoothUUID) -> String? { descriptors[uuid] }

    /// The name of a UUID from any of the three tables, trying services, then characteristics,
    /// then descriptors (the SIG allocates them from one space, so at most one matches).
    public static func name(for uuid: BluetoothUUID) -> String? {
        serviceName(uuid) ?? characteristicName(uuid) ?? descriptorName(uuid)
    }

    /// The holder of a company identifier, e.g. `0x004C` → "Apple, Inc.".
    public static func companyName(_ id: UInt16) -> String? { companies[id] }

    /// The name of a GAP appearance value (Core Supplement Part A §1.12; the value's top ten bits
    /// are the category, the low six the subcategory): "Heart Rate Sensor: Heart Rate Belt" for
    /// `0x0341`, just the category ("Heart Rate Sensor") for a generic (subcategory 0) or unlisted
    /// subcategory, nil for an unknown category.
    public static func appearanceName(_ value: UInt16) -> String? {
        guard let category = appearanceCategories[value >> 6] else { return nil }
        guard value & 0x3F != 0, let sub = appearanceSubcategories[value] else { return category }
        return "\(category): \(sub)"
    }

    /// The category part of an appearance value alone, e.g. "Heart Rate Sensor".
    public static func appearanceCategoryName(_ value: UInt16) -> String? { appearanceCategories[value >> 6] }

    // MARK: Lazily parsed tables

    static let services: [BluetoothUUID: String] = uuidTable(serviceTable)
    static let characteristics: [BluetoothUUID: String] = uuidTable(characteristicTable)
    static let descriptors: [BluetoothUUID: String] = uuidTable(descriptorTable)
    static let companies: [UInt16: String] = hexTable(companyTable)
    static let appearanceCategories: [UInt16: String] = hexTable(appearanceCategoryTable)
    static let appearanceSubcategories: [UInt16: String] = hexTable(appearanceSubcategoryTable)

    /// Splits "KEY<TAB>NAME" lines; lines without a tab are skipped (the generator never writes them).
    static func entries(_ table: String, _ body: (Substring, String) -> Void) {
        for line in table.utf8.split(separator: UInt8(ascii: "\n")) {
            guard let tab = line.firstIndex(of: UInt8(ascii: "\t")) else { continue }
            let key = Substring(line[line.startIndex..<tab])
            let name = String(Substring(line[line.index(after: tab)...]))
            body(key, name)
        }
    }

    static func uuidTable(_ table: String) -> [BluetoothUUID: String] {
        var out: [BluetoothUUID: String] = [:]
        entries(table) { key, name in
            if let uuid = BluetoothUUID(string: String(key)), out[uuid] == nil { out[uuid] = name }
        }
        return out
    }

    static func hexTable(_ table: String) -> [UInt16: String] {
        var out: [UInt16: String] = [:]
        entries(table) { key, name in
            if let value = UInt16(key, radix: 16), out[value] == nil { out[value] = name }
        }
        return out
    }
}
