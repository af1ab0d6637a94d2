import BLEHost
import BLEWire

extension Peripheral {
    /// Reads the whole values of several characteristics, one per characteristic in the order
    /// given, with one Read Multiple Variable Length Request where the server has it (Core spec
    /// Vol 3 Part G §4.8.5, Part F §3.4.4.11), completing a value the response cut short at
    /// ATT_MTU with Read Blob (§4.8.3). A server that answers Request Not Supported (it
    /// predates Core 5.2) is read one characteristic at a time, unless `fallback` is false:
    /// then the error is thrown as `BLEError.gatt(.att(code: .requestNotSupported, …))`. When
    /// the server's database changes under the read, the characteristics it reached are found
    /// again and all are read once more (see Peripheral+DatabaseChange.swift).
    public func readValues(of characteristics: [GATTCharacteristic], fallback: Bool = true) async throws -> [[UInt8]] {
        try await acrossDatabaseChange(of: characteristics) { current in
            let procedure = ReadValuesProcedure(handles: current.map(\.valueHandle), fallback: fallback)
            guard case let .values(values) = try await run(procedure), values.count == current.count else {
                throw BLEError.unsupported("internal: unexpected output for a read of several values")
            }
            return values
        }
    }
}
