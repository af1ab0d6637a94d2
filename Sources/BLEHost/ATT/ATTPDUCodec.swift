import BLEWire

// The ATT wire format, Core spec Vol 3 Part F §3.3 (PDU format) and §3.4 (each PDU's parameters).
// All multi-octet fields are little-endian (§3.3.1 via Vol 3 Part F §1.2 conventions).

extension ATTPDU {
    /// Decodes one ATT PDU (`opcode || parameters`, §3.3).
    ///
    /// Strict about lengths because a server must answer a malformed request with Invalid PDU
    /// (§3.4.1.1) and a client must not act on a malformed response: short fields, trailing
    /// octets, list lengths that do not divide the rest, zero or impossible element lengths and
    /// reserved formats all throw `WireError`. Never traps. Unknown opcodes decode to `.unknown`.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ATTPDU {
        guard let first = bytes.first else {
            throw WireError.truncated(needed: 1, remaining: 0, "ATT PDU")
        }
        let opcode = ATTOpcode(first)
        var reader = ByteReader(Array(bytes.dropFirst()))
        do throws(WireError) {
            let pdu = try decodeParameters(opcode, &reader)
            guard reader.isAtEnd else {
                throw WireError.invalid("\(reader.remaining) trailing octets")
            }
            return pdu
        } catch {
            var e = error
            let name = "ATT " + (opcode.name ?? "PDU")
            e.context = e.context.isEmpty ? name : name + ": " + e.context
            throw e
        }
    }

    private static func decodeParameters(_ opcode: ATTOpcode, _ r: inout ByteReader) throws(WireError) -> ATTPDU {
        switch opcode {
        case .errorResponse:
            let request = ATTOpcode(try r.readU8())
            let handle = try r.readU16()
            return .errorResponse(requestOpcode: request, handle: handle, code: ATTErrorCode(try r.readU8()))
        case .exchangeMTURequest:
            return .exchangeMTURequest(clientMTU: try r.readU16())
        case .exchangeMTUResponse:
            return .exchangeMTUResponse(serverMTU: try r.readU16())
        case .findInformationRequest:
            let start = try r.readU16()
            return .findInformationRequest(startHandle: start, endHandle: try r.readU16())
        case .findInformationResponse:
            // §3.4.3.2: Format 0x01 = handle + 16-bit UUID, 0x02 = handle + 128-bit UUID.
            let format = try r.readU8()
            let uuidSize: Int
            switch format {
            case 0x01: uuidSize = 2
            case 0x02: uuidSize = 16
            default: throw WireError.invalid("reserved format 0x\(String(format, radix: 16))")
            }
            var entries: [ATTHandleUUID] = []
            for element in try fixedList(&r, elementSize: 2 + uuidSize) {
                var e = ByteReader(element)
                let handle = try e.readU16()
                entries.append(ATTHandleUUID(handle: handle, uuid: try BluetoothUUID(littleEndian: e.readRemaining())))
            }
            return .findInformationResponse(entries)
        case .findByTypeValueRequest:
            let start = try r.readU16()
            let end = try r.readU16()
            let type = try r.readU16()
            return .findByTypeValueRequest(startHandle: start, endHandle: end, attributeType: type, value: r.readRemaining())
        case .findByTypeValueResponse:
            var ranges: [ATTHandleRange] = []
            for element in try fixedList(&r, elementSize: 4) {
                var e = ByteReader(element)
                let found = try e.readU16()
                ranges.append(ATTHandleRange(foundHandle: found, groupEndHandle: try e.readU16()))
            }
            return .findByTypeValueResponse(ranges)
        case .readByTypeRequest:
            let start = try r.readU16()
            let end = try r.readU16()
            return .readByTypeRequest(startHandle: start, endHandle: end, attributeType: try attUUID(&r))
        case .readByTypeResponse:
            // §3.4.4.2: Length = size of each handle-value pair, so at least the 2-octet handle.
            let length = Int(try r.readU8())
            guard length >= 2 else { throw WireError.invalid("pair length \(length) < 2") }
            var pairs: [ATTHandleValue] = []
            for element in try fixedList(&r, elementSize: length) {
                var e = ByteReader(element)
                let handle = try e.readU16()
                pairs.append(ATTHandleValue(handle: handle, value: e.readRemaining()))
            }
            return .readByTypeResponse(pairs)
        case .readRequest:
            return .readRequest(handle: try r.readU16())
        case .readResponse:
            return .readResponse(value: r.readRemaining())
        case .readBlobRequest:
            let handle = try r.readU16()
            return .readBlobRequest(handle: handle, offset: try r.readU16())
        case .readBlobResponse:
            return .readBlobResponse(value: r.readRemaining())
        case .readMultipleRequest:
            return .readMultipleRequest(handles: try handleSet(&r))
        case .readMultipleResponse:
            return .readMultipleResponse(values: r.readRemaining())
        case .readMultipleVariableRequest:
            return .readMultipleVariableRequest(handles: try handleSet(&r))
        case .readMultipleVariableResponse:
            // §3.4.4.12: the last tuple's value may be cut short by ATT_MTU; its Length field
            // still gives the full length. The cut may also fall inside a Length field.
            guard !r.isAtEnd else { throw WireError.invalid("empty Length Value Tuple List") }
            var tuples: [ATTLengthValue] = []
            while !r.isAtEnd {
                // The list may be cut at ATT_MTU − 1 octets inside the next Length field: the
                // whole tuples stand, the lone octet is dropped (the client reads the rest).
                if r.remaining == 1, !tuples.isEmpty { _ = try r.readU8(); break }
                let length = try r.readU16()
                let available = min(Int(length), r.remaining)
                tuples.append(ATTLengthValue(length: length, value: try r.readBytes(available)))
            }
            return .readMultipleVariableResponse(tuples)
        case .readByGroupTypeRequest:
            let start = try r.readU16()
            let end = try r.readU16()
            return .readByGroupTypeRequest(startHandle: start, endHandle: end, groupType: try attUUID(&r))
        case .readByGroupTypeResponse:
            // §3.4.4.10: Length covers handle, end group handle and value.
            let length = Int(try r.readU8())
            guard length >= 4 else { throw WireError.invalid("entry length \(length) < 4") }
            var entries: [ATTGroupData] = []
            for element in try fixedList(&r, elementSize: length) {
                var e = ByteReader(element)
                let handle = try e.readU16()
                let end = try e.readU16()
                entries.append(ATTGroupData(handle: handle, endGroupHandle: end, value: e.readRemaining()))
            }
            return .readByGroupTypeResponse(entries)
        case .writeRequest:
            let handle = try r.readU16()
            return .writeRequest(handle: handle, value: r.readRemaining())
        case .writeResponse:
            return .writeResponse
        case .writeCommand:
            let handle = try r.readU16()
            return .writeCommand(handle: handle, value: r.readRemaining())
        case .signedWriteCommand:
            let handle = try r.readU16()
            let rest = r.readRemaining()
            guard rest.count >= 12 else {
                throw WireError.truncated(needed: 12, remaining: rest.count, "Authentication Signature")
            }
            return .signedWriteCommand(handle: handle, value: Array(rest.dropLast(12)), signature: Array(rest.suffix(12)))
        case .prepareWriteRequest:
            let handle = try r.readU16()
            let offset = try r.readU16()
            return .prepareWriteRequest(handle: handle, offset: offset, value: r.readRemaining())
        case .prepareWriteResponse:
            let handle = try r.readU16()
            let offset = try r.readU16()
            return .prepareWriteResponse(handle: handle, offset: offset, value: r.readRemaining())
        case .executeWriteRequest:
            return .executeWriteRequest(flags: ATTExecuteWriteFlags(rawValue: try r.readU8()))
        case .executeWriteResponse:
            return .executeWriteResponse
        case .handleValueNotification:
            let handle = try r.readU16()
            return .handleValueNotification(handle: handle, value: r.readRemaining())
        case .handleValueIndication:
            let handle = try r.readU16()
            return .handleValueIndication(handle: handle, value: r.readRemaining())
        case .handleValueConfirmation:
            return .handleValueConfirmation
        case .multipleHandleValueNotification:
            // §3.4.7.4: unlike Read Multiple Variable, tuples are never truncated.
            guard !r.isAtEnd else { throw WireError.invalid("empty Handle Length Value Tuple List") }
            var tuples: [ATTHandleValue] = []
            while !r.isAtEnd {
                let handle = try r.readU16()
                let length = try r.readU16()
                tuples.append(ATTHandleValue(handle: handle, value: try r.readBytes(Int(length))))
            }
            return .multipleHandleValueNotification(tuples)
        default:
            return .unknown(opcode: opcode, parameters: r.readRemaining())
        }
    }

    /// The rest of the PDU split into equal elements; empty or ragged lists are malformed.
    private static func fixedList(_ r: inout ByteReader, elementSize: Int) throws(WireError) -> [[UInt8]] {
        let rest = r.readRemaining()
        guard elementSize > 0 else { throw WireError.invalid("zero element length") }
        guard !rest.isEmpty else { throw WireError.invalid("empty list") }
        guard rest.count % elementSize == 0 else {
            throw WireError.invalid("\(rest.count) octets do not divide into elements of \(elementSize)")
        }
        return stride(from: 0, to: rest.count, by: elementSize).map { Array(rest[$0..<$0 + elementSize]) }
    }

    /// The rest of the PDU as a 2- or 16-octet UUID (§3.2.1: ATT carries no 32-bit UUIDs).
    private static func attUUID(_ r: inout ByteReader) throws(WireError) -> BluetoothUUID {
        let rest = r.readRemaining()
        guard rest.count == 2 || rest.count == 16 else {
            throw WireError.invalid("attribute type of \(rest.count) octets")
        }
        return try BluetoothUUID(littleEndian: rest)
    }

    /// §3.4.4.7 / §3.4.4.11: a Set Of Handles holds two or more handles.
    private static func handleSet(_ r: inout ByteReader) throws(WireError) -> [UInt16] {
        guard r.remaining % 2 == 0 else { throw WireError.invalid("odd-length handle set") }
        guard r.remaining >= 4 else { throw WireError.invalid("fewer than two handles") }
        var handles: [UInt16] = []
        while !r.isAtEnd { handles.append(try r.readU16()) }
        return handles
    }

    /// The wire form, `opcode || parameters`.
    ///
    /// Lists whose PDU carries one shared element length (Read By Type and Read By Group Type
    /// responses) take it from the first element; the caller (a server building a response,
    /// §3.4.4.1) must give elements of equal length. Lengths that do not fit the field clamp.
    public func encode() -> [UInt8] {
        var w = ByteWriter()
        w.u8(opcode.rawValue)
        switch self {
        case let .errorResponse(request, handle, code):
            w.u8(request.rawValue)
            w.u16(handle)
            w.u8(code.rawValue)
        case let .exchangeMTURequest(mtu), let .exchangeMTUResponse(mtu):
            w.u16(mtu)
        case let .findInformationRequest(start, end):
            w.u16(start)
            w.u16(end)
        case let .findInformationResponse(entries):
            let short = entries.allSatisfy { $0.uuid.uint16 != nil }
            w.u8(short ? 0x01 : 0x02)
            for e in entries {
                w.u16(e.handle)
                w.append(short ? e.uuid.attBytes : e.uuid.littleEndian128)
            }
        case let .findByTypeValueRequest(start, end, type, value):
            w.u16(start)
            w.u16(end)
            w.u16(type)
            w.append(value)
        case let .findByTypeValueResponse(ranges):
            for range in ranges {
                w.u16(range.foundHandle)
                w.u16(range.groupEndHandle)
            }
        case let .readByTypeRequest(start, end, type):
            w.u16(start)
            w.u16(end)
            w.append(type.attBytes)
        case let .readByTypeResponse(pairs):
            w.u8(UInt8(clamping: 2 + (pairs.first?.value.count ?? 0)))
            for p in pairs {
                w.u16(p.handle)
                w.append(p.value)
            }
        case let .readRequest(handle):
            w.u16(handle)
        case let .readResponse(value), let .readBlobResponse(value), let .readMultipleResponse(value):
            w.append(value)
        case let .readBlobRequest(handle, offset):
            w.u16(handle)
            w.u16(offset)
        case let .readMultipleRequest(handles), let .readMultipleVariableRequest(handles):
            for h in handles { w.u16(h) }
        case let .readMultipleVariableResponse(tuples):
            for t in tuples {
                w.u16(t.length)
                w.append(t.value)
            }
        case let .readByGroupTypeRequest(start, end, type):
            w.u16(start)
            w.u16(end)
            w.append(type.attBytes)
        case let .readByGroupTypeResponse(entries):
            w.u8(UInt8(clamping: 4 + (entries.first?.value.count ?? 0)))
            for e in entries {
                w.u16(e.handle)
                w.u16(e.endGroupHandle)
                w.append(e.value)
            }
        case let .writeRequest(handle, value), let .writeCommand(handle, value),
             let .handleValueNotification(handle, value), let .handleValueIndication(handle, value):
            w.u16(handle)
            w.append(value)
        case let .signedWriteCommand(handle, value, signature):
            w.u16(handle)
            w.append(value)
            w.append(signature)
        case let .prepareWriteRequest(handle, offset, value), let .prepareWriteResponse(handle, offset, value):
            w.u16(handle)
            w.u16(offset)
            w.append(value)
        case let .executeWriteRequest(flags):
            w.u8(flags.rawValue)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case let .multipleHandleValueNotification(tuples):
            for t in tuples {
                w.u16(t.handle)
                w.u16(UInt16(clamping: t.value.count))
                w.append(t.value)
            }
        case let .unknown(_, parameters):
            w.append(parameters)
        }
        return w.bytes
    }
}
