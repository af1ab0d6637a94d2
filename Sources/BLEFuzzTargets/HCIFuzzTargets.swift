import BLEWire
import BLEHCI
import BLEHost

/// Fuzz targets for the HCI layer (Core spec Vol 4 Part E §5.4 packets, §7.7 events, Vol 4 Part A
/// §2 H4 framing) and the btsnoop capture format. Each decodes the input and checks what must
/// hold for anything that decoded: re-encoding gives the bytes back (or, where the decoder
/// normalises, the same value), and neighbouring decoders agree on framing.
enum HCIFuzzTargets {
    // MARK: H4 stream

    /// `H4StreamDecoder` fed the input in chunks chosen by the first byte must produce exactly
    /// the frames (and the error, at the same point) that one whole-stream push produces, and
    /// those a reference framer written from §5.4 produces. Every frame must re-serialise to the
    /// stream bytes it came from, and command/ACL frames must decode with their own decoders
    /// (the H4 length fields are theirs).
    static func h4Stream(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let control = input.u8()
        let seed = input.u8()
        var stream = input.rest()
        // Mode 3 repeats the stream so it passes the decoder's 4096-byte compaction threshold.
        if control & 3 == 3, !stream.isEmpty {
            let copies = min(64, 4096 / stream.count + 2)
            stream = Array([[UInt8]](repeating: stream, count: copies).joined())
        }

        // One push of everything.
        var whole = H4StreamDecoder()
        var wholeFrames: [H4Frame] = []
        var wholeFailed = false
        do { try whole.push(stream, into: &wholeFrames) } catch { wholeFailed = true }

        // The same bytes in chunks.
        var chunked = H4StreamDecoder()
        var chunkedFrames: [H4Frame] = []
        var chunkedFailed = false
        var rng = UInt32(seed) &* 2_654_435_761 &+ 1
        var offset = 0
        while offset < stream.count {
            let size: Int
            switch control & 3 {
            case 0: size = 1
            case 2: size = stream.count
            default:
                rng = rng &* 1_103_515_245 &+ 12_345
                size = 1 + Int((rng >> 16) % UInt32(1 + Int(control >> 2) * 4))
            }
            let end = min(stream.count, offset + size)
            do {
                try chunked.push(Array(stream[offset..<end]), into: &chunkedFrames)
            } catch {
                chunkedFailed = true
                break
            }
            offset = end
        }

        FuzzCheck.require(wholeFailed == chunkedFailed,
                          "H4: whole-stream error \(wholeFailed) but chunked error \(chunkedFailed)")
        FuzzCheck.require(wholeFrames == chunkedFrames,
                          "H4: \(wholeFrames.count) frames in one push, \(chunkedFrames.count) when chunked")

        let reference = referenceH4Frames(stream)
        FuzzCheck.require(reference.frames == wholeFrames,
                          "H4: decoder gave \(wholeFrames.count) frames, reference framer \(reference.frames.count)")
        FuzzCheck.require(reference.failed == wholeFailed,
                          "H4: decoder error \(wholeFailed), reference framer error \(reference.failed)")

        var consumed: [UInt8] = []
        for frame in wholeFrames {
            consumed += frame.bytes
            FuzzCheck.require((try? H4Frame(bytes: frame.bytes)) == frame, "H4Frame(bytes:) does not round-trip \(fuzzHex(frame.bytes))")
            switch frame.type {
            case .command:
                if let command = try? HCICommand.decode(frame.payload) {
                    FuzzCheck.require(command.encode() == frame.payload, "H4 command frame does not re-encode: \(fuzzHex(frame.payload))")
                } else {
                    FuzzCheck.fail("H4 framed a command that HCICommand.decode rejects: \(fuzzHex(frame.payload))")
                }
            case .acl:
                if let packet = try? ACLPacket.decode(frame.payload) {
                    FuzzCheck.require(packet.encode() == frame.payload, "H4 ACL frame does not re-encode: \(fuzzHex(frame.payload))")
                } else {
                    FuzzCheck.fail("H4 framed an ACL packet that ACLPacket.decode rejects: \(fuzzHex(frame.payload))")
                }
            case .event:
                // The event's own decoder may reject its parameters, but never its framing.
                if case let .failure(error) = Result(catching: { () throws(WireError) in try HCIEvent.decode(frame.payload) }),
                   error.context.hasPrefix("HCI event") {
                    FuzzCheck.fail("H4 framed an event whose length HCIEvent.decode rejects: \(error) \(fuzzHex(frame.payload))")
                }
            case .sco, .iso:
                break
            }
        }
        FuzzCheck.require(Array(stream.prefix(consumed.count)) == consumed, "H4 frames are not the stream's prefix")
    }

    /// §5.4 framing, written independently of `H4StreamDecoder`: the frames of `stream`, and
    /// whether it stops at an unknown indicator.
    static func referenceH4Frames(_ stream: [UInt8]) -> (frames: [H4Frame], failed: Bool) {
        var frames: [H4Frame] = []
        var i = 0
        while i < stream.count {
            guard let type = HCIPacketType(rawValue: stream[i]) else { return (frames, true) }
            let lengthField: (offset: Int, size: Int, header: Int)
            switch type {
            case .command, .sco: lengthField = (2, 1, 3)
            case .event: lengthField = (1, 1, 2)
            case .acl, .iso: lengthField = (2, 2, 4)
            }
            let header = i + 1
            guard stream.count >= header + lengthField.header else { break }
            var length = Int(stream[header + lengthField.offset])
            if lengthField.size == 2 { length |= Int(stream[header + lengthField.offset + 1]) << 8 }
            if type == .iso { length &= 0x3FFF }
            let end = header + lengthField.header + length
            guard stream.count >= end else { break }
            frames.append(H4Frame(type: type, payload: Array(stream[header..<end])))
            i = end
        }
        return (frames, false)
    }

    // MARK: HCI events

    /// Any event that decodes must re-encode to something that decodes to the same event, and
    /// that encoding must be stable (a fixed point). Command Complete return parameters go
    /// through every typed return-parameter decoder, whose only success is a zero status.
    static func hciEvent(_ data: [UInt8]) {
        if let event = try? HCIEvent.decode(data) {
            FuzzCheck.require(event.code == data.first, "HCI event code \(event.code) but first byte \(data.first ?? 0)")
            let encoded = event.encode()
            switch Result(catching: { () throws(WireError) in try HCIEvent.decode(encoded) }) {
            case let .success(again):
                FuzzCheck.require(again == event, "HCI event round trip changed \(event) into \(again); input \(fuzzHex(data))")
                FuzzCheck.require(again.encode() == encoded, "HCI event encoding is not stable for \(fuzzHex(data))")
            case let .failure(error):
                FuzzCheck.fail("re-encoded HCI event does not decode (\(error)): input \(fuzzHex(data)) encoded \(fuzzHex(encoded))")
            }
            FuzzCheck.require(event.h4Frame.bytes == [HCIPacketType.event.rawValue] + encoded, "HCI event h4Frame differs from encode()")
            if case let .commandComplete(_, opcode, returnParameters) = event {
                checkReturnParameters(opcode, returnParameters)
            }
        }
        // The code/parameters entry point has no length byte, so it also sees parameter blocks
        // longer than 255 bytes.
        if let code = data.first {
            let parameters = Array(data.dropFirst())
            if let event = try? HCIEvent.decode(code: code, parameters: parameters) {
                let again = try? HCIEvent.decode(code: event.code, parameters: event.parameters)
                FuzzCheck.require(again == event, "HCIEvent.decode(code:parameters:) round trip changed \(event) for \(fuzzHex(data))")
            }
        }
    }

    /// Every typed return-parameter decoder must either throw or, having succeeded, have seen a
    /// success status (§7.7.14 via ReturnParameters.swift's contract).
    static func checkReturnParameters(_ opcode: HCIOpcode, _ bytes: [UInt8]) {
        let statusOK = bytes.first == 0
        func check<T: HCIReturnParameters>(_ type: T.Type) {
            if (try? T(returnParameters: bytes)) != nil {
                FuzzCheck.require(statusOK, "\(T.self) decoded return parameters with status \(bytes.first ?? 0): \(fuzzHex(bytes))")
            }
        }
        check(LocalVersionInformation.self)
        check(LocalSupportedCommands.self)
        check(LocalSupportedFeatures.self)
        check(LESupportedFeatures.self)
        check(BufferSize.self)
        check(LEBufferSizeV1.self)
        check(LEBufferSizeV2.self)
        check(BDAddressReturn.self)
        check(LERandResult.self)
        check(LEEncryptResult.self)
        check(LEMaximumDataLength.self)
        check(LESuggestedDefaultDataLength.self)
        check(LEReadPHYResult.self)
        check(LEAdvertisingTxPower.self)
        check(LEFilterAcceptListSize.self)
        check(LEMaximumAdvertisingDataLength.self)
        check(LESupportedAdvertisingSets.self)
        check(LESelectedTxPower.self)
        check(LEPeriodicAdvertiserListSize.self)
        if (try? ConnectionHandleReturn(opcode: opcode, returnParameters: bytes)) != nil {
            FuzzCheck.require(statusOK, "ConnectionHandleReturn decoded with status \(bytes.first ?? 0)")
        }
        if (try? checkStatusReturnParameters(opcode, bytes)) != nil {
            FuzzCheck.require(statusOK, "checkStatusReturnParameters accepted status \(bytes.first ?? 0)")
        }
    }

    // MARK: HCI commands

    /// A command that decodes re-encodes to exactly the input; the opcode splits into OGF/OCF
    /// and back.
    static func hciCommand(_ data: [UInt8]) {
        guard let command = try? HCICommand.decode(data) else {
            // Decoding fails exactly when the length byte does not match the bytes present.
            if data.count >= 3 {
                FuzzCheck.require(Int(data[2]) != data.count - 3, "HCICommand.decode rejected a well-framed command \(fuzzHex(data))")
            }
            return
        }
        FuzzCheck.require(command.encode() == data, "HCI command round trip: \(fuzzHex(data)) re-encoded as \(fuzzHex(command.encode()))")
        FuzzCheck.require(HCIOpcode(ogf: command.opcode.ogf, ocf: command.opcode.ocf) == command.opcode,
                          "HCIOpcode OGF/OCF split does not round-trip for \(command.opcode.rawValue)")
        FuzzCheck.require(!command.description.isEmpty, "empty HCI command description")
    }

    // MARK: ACL packets and reassembly

    /// A program of ACL packets (decoded from raw bytes, built from fields, or fragments of an
    /// L2CAP frame) pushed into `L2CAPRecombiner` and into a reference model of its documented
    /// behaviour (Vol 4 Part E §5.4.2, Vol 3 Part A §7.2); both must agree after every packet.
    static func aclReassembly(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var recombiner = L2CAPRecombiner()
        var model = ReferenceReassembler()
        var steps = 0

        func push(_ packet: ACLPacket) -> Result<[UInt8]?, L2CAPRecombinationError> {
            let actual = Result { () throws(L2CAPRecombinationError) in try recombiner.push(packet) }
            let expected = model.push(packet)
            FuzzCheck.require(actual == expected,
                              "ACL reassembly of handle \(packet.handle) \(packet.boundary) [\(fuzzHex(packet.data))]: got \(actual), model \(expected)")
            FuzzCheck.require(recombiner.lastDiscarded == model.lastDiscarded,
                              "ACL lastDiscarded \(String(describing: recombiner.lastDiscarded)), model \(String(describing: model.lastDiscarded))")
            FuzzCheck.require(recombiner.handlesInProgress == model.handlesInProgress,
                              "ACL handles in progress \(recombiner.handlesInProgress), model \(model.handlesInProgress)")
            if case let .success(pdu?) = actual {
                switch Result(catching: { () throws(WireError) in try L2CAPFrame(bytes: pdu) }) {
                case let .success(frame):
                    FuzzCheck.require(frame.encode() == pdu, "reassembled PDU does not re-encode as an L2CAP frame")
                case let .failure(error):
                    FuzzCheck.fail("reassembled PDU is not an L2CAP frame (\(error)): \(fuzzHex(pdu))")
                }
            }
            return actual
        }

        while !input.isAtEnd, steps < 256 {
            steps += 1
            switch input.u8() % 5 {
            case 0:
                // Raw bytes through the packet decoder.
                let raw = input.chunk()
                guard let packet = try? ACLPacket.decode(raw) else { continue }
                FuzzCheck.require(packet.encode() == raw, "ACL packet round trip: \(fuzzHex(raw)) → \(fuzzHex(packet.encode()))")
                FuzzCheck.require(packet.h4Frame.bytes == [HCIPacketType.acl.rawValue] + raw, "ACL h4Frame differs")
                _ = push(packet)
            case 1, 2:
                // A packet built from fields, on one of four handles so that PDUs interleave.
                let handle = UInt16(input.u8() & 0x03)
                let boundary = PacketBoundary(rawValue: input.u8() & 0x03) ?? .continuing
                _ = push(ACLPacket(handle: handle, boundary: boundary, data: input.chunk()))
            case 3:
                // A whole L2CAP frame, fragmented and pushed: it must come back whole, whatever
                // was in progress on the handle (its first fragment starts afresh).
                let handle = UInt16(input.u8() & 0x03)
                let maxLength = Int(input.u8() % 40)
                let cid = input.u16()
                let pdu = L2CAPFrame(channelID: cid, payload: input.chunk()).encode()
                let fragments = ACLFragmenter.fragment(handle: handle, pdu: pdu, maxLength: maxLength)
                FuzzCheck.require(Array(fragments.map(\.data).joined()) == pdu, "ACL fragments do not concatenate to the PDU")
                FuzzCheck.require(fragments.allSatisfy { $0.data.count <= max(1, maxLength) && $0.handle == handle },
                                  "ACL fragment longer than \(maxLength) or on the wrong handle")
                FuzzCheck.require(fragments.first?.boundary == .firstNonFlushable
                                  && fragments.dropFirst().allSatisfy { $0.boundary == .continuing },
                                  "ACL fragment boundaries wrong")
                for (index, fragment) in fragments.enumerated() {
                    let result = push(fragment)
                    if index == fragments.count - 1 {
                        FuzzCheck.require(result == .success(pdu), "fragmented PDU not reassembled: \(result)")
                    } else {
                        FuzzCheck.require(result == .success(nil), "fragment \(index) of \(fragments.count) gave \(result)")
                    }
                }
            default:
                if input.bool() {
                    let handle = UInt16(input.u8() & 0x03)
                    recombiner.reset(handle: handle)
                    model.reset(handle: handle)
                } else {
                    recombiner.resetAll()
                    model.resetAll()
                }
            }
        }
    }

    /// `L2CAPRecombiner`'s documented contract, stated plainly: per handle, a start fragment
    /// begins a PDU (one in progress is dropped and recorded in `lastDiscarded`, the new one is
    /// kept, as BlueZ does), a continuation extends one (an error if none), the PDU completes at
    /// basic-header length + 4, and more than that is an overflow; every error drops the
    /// handle's partial PDU.
    struct ReferenceReassembler {
        var partial: [UInt16: [UInt8]] = [:]
        var lastDiscarded: L2CAPRecombinationError?

        var handlesInProgress: [UInt16] { partial.keys.sorted() }

        mutating func push(_ packet: ACLPacket) -> Result<[UInt8]?, L2CAPRecombinationError> {
            let handle = packet.handle
            let previous = partial.removeValue(forKey: handle)
            let buffer: [UInt8]
            if packet.boundary != .continuing {
                if previous != nil { lastDiscarded = .startWhileInProgress(handle: handle) }
                buffer = packet.data
            } else {
                guard let previous else { return .failure(.continuationWithoutStart(handle: handle)) }
                buffer = previous + packet.data
            }
            if buffer.count < 4 {
                partial[handle] = buffer
                return .success(nil)
            }
            let declared = Int(buffer[0]) + Int(buffer[1]) * 256 + 4
            if buffer.count == declared { return .success(buffer) }
            if buffer.count > declared { return .failure(.overflow(handle: handle, expected: declared, received: buffer.count)) }
            partial[handle] = buffer
            return .success(nil)
        }

        mutating func reset(handle: UInt16) { partial[handle] = nil }
        mutating func resetAll() { partial = [:] }
    }

    // MARK: btsnoop

    /// A file `BTSnoop.parse` accepts must be exactly the header and its records written back
    /// out; records in the shape our writer produces must be byte-identical to
    /// `BTSnoop.record(...)`. With the first byte odd the rest is given a valid file header, so
    /// the fuzzer spends its time on records.
    static func btsnoop(_ data: [UInt8]) {
        guard let first = data.first else {
            FuzzCheck.require((try? BTSnoop.parse([])) == nil, "btsnoop parsed an empty file")
            return
        }
        let file = first & 1 == 1 ? BTSnoop.fileHeader + data.dropFirst() : data
        guard let records = try? BTSnoop.parse(file) else { return }

        var rebuilt = BTSnoop.fileHeader
        for record in records {
            var one: [UInt8] = []
            BigEndian.append32(record.originalLength, to: &one)
            BigEndian.append32(record.includedLength, to: &one)
            BigEndian.append32(record.flags, to: &one)
            BigEndian.append32(record.cumulativeDrops, to: &one)
            BigEndian.append64(UInt64(bitPattern: record.timestamp), to: &one)
            one += record.data
            rebuilt += one

            FuzzCheck.require(Int(record.includedLength) == record.data.count, "btsnoop record data length differs from included length")
            FuzzCheck.require(record.includedLength <= record.originalLength, "btsnoop record included > original")
            FuzzCheck.require((record.direction == .received) == (record.flags & 1 == 1), "btsnoop direction does not follow flags bit 0")
            FuzzCheck.require(BTSnoop.timestamp(unixMicroseconds: record.unixMicroseconds) == record.timestamp,
                              "btsnoop timestamp conversion does not round-trip")
            if let frame = try? record.frame() {
                FuzzCheck.require(frame.bytes == record.data, "btsnoop record frame does not round-trip")
                if record.flags == BTSnoop.flags(for: frame.type, direction: record.direction),
                   record.originalLength == record.includedLength, record.cumulativeDrops == 0 {
                    let written = BTSnoop.record(frame: frame, direction: record.direction, timestamp: record.timestamp)
                    FuzzCheck.require(written == one, "BTSnoop.record differs from the parsed record \(fuzzHex(one))")
                }
            }
        }
        FuzzCheck.require(rebuilt == file, "btsnoop file does not round-trip (\(records.count) records, \(file.count) bytes)")
    }
}
