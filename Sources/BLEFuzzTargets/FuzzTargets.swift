import BLEWire
import BLEHCI
import BLEHost
import BLECrypto

/// Every fuzz target of the stack, by the name `ble-fuzz TARGET` takes, and the golden seeds the
/// smoke mode mutates and `ble-fuzz TARGET --write-seeds DIR` writes for libFuzzer's corpus.
///
/// A target takes one input, must never trap, and reports broken invariants through
/// `FuzzCheck` (fatal under libFuzzer, collected in smoke mode and tests). ARCHITECTURE.md:
/// "Every decoder gets a fuzz target."
public enum FuzzTargets {
    public static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "h4-stream": HCIFuzzTargets.h4Stream,
        "hci-event": HCIFuzzTargets.hciEvent,
        "hci-command": HCIFuzzTargets.hciCommand,
        "acl-reassembly": HCIFuzzTargets.aclReassembly,
        "btsnoop": HCIFuzzTargets.btsnoop,
        "l2cap-signaling": L2CAPFuzzTargets.l2capSignaling,
        "le-signaling-channel": L2CAPFuzzTargets.leSignalingChannel,
        "credit-based-signaling": CreditBasedFuzzTargets.creditBasedSignaling,
        "k-frame-reassembler": CreditBasedFuzzTargets.kFrameReassembler,
        "enhanced-credit-based-signaling": EnhancedCreditBasedFuzzTargets.enhancedSignaling,
        "att-pdu": ATTFuzzTargets.attPDU,
        "att-client-bearer": ATTFuzzTargets.attClientBearer,
        "att-client-bearer-set": ATTBearerSetFuzzTarget.run,
        "att-signed-write": ATTSignedWriteFuzzTarget.run,
        "advertising-data": GAPFuzzTargets.advertisingData,
        "http-request": HTTPFuzzTargets.httpRequest,
        "gateway-command": GatewayFuzzTargets.gatewayCommand,
        "scan-aggregator": GAPFuzzTargets.scanAggregator,
        "extended-report-assembly": ExtendedReportFuzzTarget.run,
        "smp-pdu": SMPFuzzTargets.smpPDU,
        "smp-pairing": SMPStateFuzzTargets.smpPairing,
    ]

    /// Target names in a stable order.
    public static var names: [String] { all.keys.sorted() }

    /// Valid, interesting inputs per target: real packets built with the stack's own encoders
    /// (so they follow the spec layouts those encoders are tested against), framed the way each
    /// target reads its input.
    public static func seeds(for name: String) -> [[UInt8]] {
        switch name {
        case "h4-stream":
            let stream = HCICommand.reset.h4Frame.bytes
                + HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0]).h4Frame.bytes
                + ACLPacket(handle: 0x40, boundary: .firstFlushable, data: L2CAPFrame(channelID: 4, payload: [0x0A, 0x03, 0x00]).encode()).h4Frame.bytes
                + [0x03, 0x01, 0x00, 0x02, 0xAA, 0xBB] + [0x05, 0x01, 0x00, 0x01, 0x00, 0xCC]
            return [[0x00, 0x00] + stream, [0x05, 0x17] + stream, [0x02, 0x00] + stream, [0x0B, 0x01] + stream]
        case "hci-event":
            return seedEvents.map { $0.encode() }
        case "hci-command":
            return [
                HCICommand.reset.encode(),
                HCICommand.leSetScanEnable(enable: true, filterDuplicates: true).encode(),
                HCICommand.disconnect(handle: 0x40).encode(),
                HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06]).encode(),
                HCICommand.leConnectionUpdate(handle: 0x40, intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 100).encode(),
            ]
        case "acl-reassembly":
            let att = L2CAPFrame(channelID: 4, payload: [0x1B, 0x03, 0x00] + Array(0..<30)).encode()
            let raw = ACLPacket(handle: 1, boundary: .firstFlushable, data: L2CAPFrame(channelID: 5, payload: [1, 2]).encode()).encode()
            return [
                [3, 0, 10, 4, 0, 33] + Array(0..<33),
                [1, 1, 2, UInt8(10)] + Array(att.prefix(10)) + [2, 1, 1, UInt8(att.count - 10)] + Array(att.dropFirst(10)),
                [0, UInt8(raw.count)] + raw + [4, 1, 2] + [3, 2, 5, 6, 0, 4, 1, 2, 3, 4],
            ]
        case "btsnoop":
            var file = BTSnoop.fileHeader
            file += BTSnoop.record(frame: HCICommand.reset.h4Frame, direction: .sent, timestamp: BTSnoop.timestamp(unixMicroseconds: 1_700_000_000_000_000))
            file += BTSnoop.record(frame: HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0]).h4Frame,
                                   direction: .received, timestamp: BTSnoop.timestamp(unixMicroseconds: 1_700_000_000_000_500))
            return [file, [0x01] + file.dropFirst(BTSnoop.fileHeaderLength)]
        case "l2cap-signaling":
            let commands: [LESignalingCommand] = [
                .connectionParameterUpdateRequest(identifier: 1, .init(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 100)),
                .connectionParameterUpdateResponse(identifier: 1, result: .accepted),
                .commandReject(identifier: 2, reason: .invalidCID(localCID: 0x40, remoteCID: 0x41)),
                .commandReject(identifier: 3, reason: .signalingMTUExceeded(actualMTU: 23)),
                .disconnectionRequest(identifier: 4, destinationCID: 0x40, sourceCID: 0x41),
                .leCreditBasedConnectionRequest(identifier: 5, .init(spsm: 0x80, sourceCID: 0x40, mtu: 256, mps: 247, initialCredits: 10)),
                .creditBasedConnectionRequest(identifier: 6, .init(spsm: 0x80, mtu: 256, mps: 247, initialCredits: 10, sourceCIDs: [0x40, 0x41])),
                .flowControlCredit(identifier: 7, channelID: 0x40, credits: 5),
            ]
            return commands.map { L2CAPFrame(channelID: L2CAPChannel.leSignaling, payload: $0.encode()).encode() } + commands.map { $0.encode() }
        case "le-signaling-channel":
            let request = LESignalingCommand.connectionParameterUpdateRequest(
                identifier: 9, .init(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 100)).encode()
            return [
                [1, 0, 0, UInt8(request.count)] + request + [5, 6, 0, 12, 0, 0, 0, 100, 0, 7],
                [0, 0, 6, 24, 0, 24, 0, 0, 0, 200, 0, 4, 1, 1, 4, 1, 0, 0, 6, 6, 0, 6, 0, 0, 0, 10, 0, 4, 0, 0, 7],
                [1, 2, 2, 0x14, 3, 10, 0x80, 0, 0x40, 0, 0, 1, 0xF7, 0, 10, 0, 2, 0x01, 0, 0],
            ]
        case "credit-based-signaling":
            // Peripheral, listener on 0x80 (MTU 123, MPS 123, 4 credits, no security), an
            // unencrypted link; then: a request on 0x80 from CID 0x40, a K-frame, a credit, our
            // send, a Disconnection Request; and our connect answered with success.
            let request = LESignalingCommand.leCreditBasedConnectionRequest(identifier: 1, .init(spsm: 0x80, sourceCID: 0x40, mtu: 100, mps: 50, initialCredits: 2)).encode()
            let response = LESignalingCommand.leCreditBasedConnectionResponse(identifier: 1, .init(destinationCID: 0x41, mtu: 100, mps: 30, initialCredits: 3, result: .success)).encode()
            return [
                [0, 0x80, 100, 0, 100, 3, 0, 0, 0, 0, UInt8(request.count)] + request + [6, 0, 0, 4, 0, 2, 0, 0xAB, 0xCD]
                    + [4, 0, 0, 1, 5, 9, 0, 0, 10, 0, 0, 5, 0, 0, 1],
                [1, 0x80, 100, 0, 100, 3, 0, 0, 0, 8, 0x80, 0, 0, UInt8(response.count)] + response + [9, 0, 20, 0] + Array(0..<20) + [11, 31],
                [0, 0x80, 0, 0, 0, 0, 1, 0, 0xFF, 1, 1, 0x80, 0, 0x41, 0, 0x20, 0, 0x20, 0, 1, 0, 1, 1, 1],
            ]
        case "enhanced-credit-based-signaling":
            // Peripheral, listener on 0x80 (MTU 100, MPS 64, 3 credits, both modes): the peer
            // asks for two channels from CIDs 0x50, 0x51 and reconfigures the first; we ask for
            // two, answered with success on 0x60 and 0x61; time passes. The second seed only
            // takes enhanced requests and gets our reconfiguration of a channel answered.
            let opening: [UInt8] = [1, 2, 1, 0x10, 1, 0x11, 1, 1, 100, 0, 1, 16, 5, 0, 7]
            return [
                [1, 0x80, 100, 0, 64, 3, 0] + opening + [4, 1, 1, 0, 1, 200, 0, 1, 20, 3]
                    + [8, 0, 0, 0, 1, 0x80, 2] + [3, 2, 0, 0x20, 0, 0x21, 1, 0, 0, 1, 0, 4, 0, 1, 1] + [11, 31],
                [0, 0x80, 100, 0, 64, 3, 1] + opening + [9, 0, 1, 0, 0, 1, 0, 1] + [5, 1, 1, 0] + [6, 0, 4, 3, 0, 1, 2, 3],
            ]
        case "k-frame-reassembler":
            // MTU 100, MPS 23, 2 credits: a segmented 60-byte SDU, raw frames, consumes, grants.
            return [
                [77, 0, 0, 0, 1, 2, 60, 0, 7, 3, 4, 0, 5, 0, 1, 0, 0xAA, 3, 4],
                [0, 1, 0, 0, 3, 2, 0xFF, 0xFF, 9, 2, 10, 0, 1, 5, 0, 1, 2, 3, 4, 5, 0, 3, 0, 0x63, 0, 1],
                [0, 0, 0, 0, 0, 1, 1, 0, 0x41, 1, 1, 0, 0x42, 0, 1, 0, 0x43],
            ]
        case "att-pdu":
            return seedATTPDUs.map { $0.encode() }
        case "att-client-bearer":
            return [
                // MTU 23: discover all services, answered twice with structured responses, then
                // an Error Response; a read; a notification; a long write.
                [0, 0, 1, 1, 0, 0xFF, 0xFF, 1, 3, 2, 1, 2, 0, 5, 0x0D, 0x18, 3, 2, 0, 1, 0, 3, 0],
                [0, 1, 6, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0x0A, 7, 0, 3, 0x2A, 0, 0x12],
                [3, 0, 12, 0, 0, 0, 0, 0, 0x03, 0x00, 1, 40] + Array(0..<40) + [3, 2, 1, 3, 2, 1, 3, 3, 0, 3, 4],
                [0, 1, 13, 0, 0, 0, 0, 0, 2, 3, 0, 4, 1, 2, 3, 4, 5, 0, 2, 5, 6, 3, 2, 1, 3, 2, 1, 3, 2, 1, 8, 1, 9, 0, 0],
            ]
        case "att-client-bearer-set":
            return [
                // MTU 23; two enhanced bearers open; three reads go out at once, answered on each
                // bearer; a fourth waits, one bearer closes, time runs out on another.
                [0, 4, 1, 0, 100, 0, 4, 2, 0, 100, 0, 0, 0, 1, 0, 3, 0, 0, 0, 1, 0, 5, 0, 0, 0, 1, 0, 7, 0,
                 2, 1, 0, 1, 0x55, 2, 2, 0, 1, 0x66, 0, 0, 1, 2, 9, 0, 9, 0, 5, 1, 7, 0, 35, 2, 0, 0, 1, 0x77],
                // Notifications and an indication on enhanced bearers; a pinned write; cancel.
                [1, 4, 1, 0, 64, 0, 3, 1, 2, 0x1B, 0x05, 0x00, 0xAA, 3, 1, 4, 0x1D, 0x05, 0x00, 0x01,
                 0, 1, 0, 3, 0x09, 0x00, 1, 0x01, 6, 0, 1, 2, 1, 1, 0x13],
            ]
        case "att-signed-write":
            // Flags (unencrypted, authenticated, last counter 5, key present), then: a good write
            // to the stored value with counter 6; the same with a bit flipped; one to the
            // authenticated value; an arbitrary PDU that decodes as a signed write.
            let good: [UInt8] = [0x06, 0x00, 0x00, 0x05, 0x00, 1, 0, 3, 0x61, 0x62, 0x63, 0x00, 0x00, 0x06, 0x00]
            return [
                good,
                [0x06, 0x00, 0x00, 0x05, 0x00, 2, 0, 3, 0x61, 0x62, 0x63, 0x00, 0x00, 0x06, 0x00, 0x21, 0x00],
                [0x02, 1, 1, 1, 0x01, 0x00, 0x00, 0x00, 0x00],
                [0x00, 0, 0xD2, 0x10, 0x00, 0x41] + Array(repeating: 0xAB, count: 12),
            ]
        case "advertising-data":
            let ad = AdvertisingData.Builder()
                .flags([.leGeneralDiscoverable, .brEdrNotSupported])
                .serviceUUIDs([BluetoothUUID(0x180D), BluetoothUUID(high: 0x1234_5678_1234_5678, low: 0x1234_5678_9ABC_DEF0)])
                .localName("Heart Rate Sensor")
                .build().encode()
            let response = AdvertisingData.Builder()
                .manufacturerData(companyID: 0x004C, data: [0x02, 0x15])
                .serviceData(BluetoothUUID(0x180F), [0x64])
                .txPowerLevel(4)
                .uri("https://example.com")
                .advertisingInterval(160)
                .build().encode()
            return [[UInt8(ad.count)] + ad + response, [0] + ad, [5, 2, 1, 6, 0, 0, 9, 8, 0x41]]
        case "http-request":
            return HTTPFuzzTargets.seeds
        case "gateway-command":
            return GatewayFuzzTargets.seeds
        case "smp-pdu":
            return [
                [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07], [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05],
                [0x03] + Array(0..<16), [0x05, 0x05], [0x07, 0x34, 0x12] + Array(1...8), [0x09, 0x01] + Array(1...6),
                [0x0B, 0x0D], [0x0C] + Array(repeating: 0x11, count: 64), [0x0E, 0x01],
            ]
        case "smp-pairing":
            // Responder: a Pairing Request, then a public key; initiator: start, a response.
            let request = SMPPDU.pairingRequest(SMPPairingFeatures(ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
                                                                   initiatorKeyDistribution: [.identityKey], responderKeyDistribution: [.encryptionKey, .identityKey])).encode()
            let response = SMPPDU.pairingResponse(SMPPairingFeatures(ioCapability: .displayOnly, authRequirements: [.bonding],
                                                                     initiatorKeyDistribution: [], responderKeyDistribution: [.encryptionKey])).encode()
            let key = SMPPDU.pairingPublicKey(x: P256.debugPublicKeyX.reversed(), y: P256.debugPublicKeyY.reversed()).encode()
            return [
                [3, 0, 1, 1, 1, UInt8(request.count)] + request + [1, 1, UInt8(key.count)] + key,
                [0, 0, 0, 0, 0, 0, 1, UInt8(response.count)] + response + [0, 1, 17, 3] + Array(repeating: 7, count: 16) + [0, 8, 40],
            ]
        case "extended-report-assembly":
            return ExtendedReportFuzzTarget.seeds
        case "scan-aggregator":
            let ad = AdvertisingData.Builder().flags([.leGeneralDiscoverable]).serviceUUIDs([BluetoothUUID(0x180D)]).build().encode()
            let name = AdvertisingData.Builder().localName("abc").build().encode()
            return [
                [0x10, 0, 1, 0, 0xC4, UInt8(ad.count)] + ad + [0, 1, 4, 0xC8, UInt8(name.count)] + name + [7, 100, 1],
                [0x07, 8, 1, 2, 0xB0, UInt8(ad.count)] + ad + [8, 1, 4, 0xB0, UInt8(name.count)] + name + [8, 1, 2, 0xB0, 0],
            ]
        default:
            return []
        }
    }

    static let seedEvents: [HCIEvent] = {
        let peer = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
        let sync = LEPeriodicSyncEstablished(status: .success, syncHandle: 1, sid: 3, advertiser: peer, phy: .leCoded,
                                             interval: 80, clockAccuracy: 5)
        return [
            .commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0]),
            .commandComplete(numHCICommandPackets: 1, opcode: .leReadBufferSizeV1, returnParameters: [0, 27, 0, 8]),
            .commandComplete(numHCICommandPackets: 1, opcode: .readLocalVersionInformation, returnParameters: [0, 0x0C, 0, 0, 0x0C, 0x5F, 0, 0, 0]),
            .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection),
            .disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminatedConnection),
            .numberOfCompletedPackets([CompletedPackets(handle: 0x40, count: 2), CompletedPackets(handle: 0x41, count: 1)]),
            .le(.connectionComplete(LEConnectionComplete(handle: 0x40, role: .central, peer: peer, interval: 24, latency: 0, supervisionTimeout: 72))),
            .le(.connectionComplete(LEConnectionComplete(handle: 0x41, role: .peripheral, peer: peer, interval: 24, latency: 0,
                                                         supervisionTimeout: 72, format: .enhancedV2(advertisingHandle: 0xFF, syncHandle: 0xFFFF)))),
            .le(.advertisingReport([LEAdvertisingReport(legacy: .advInd, address: peer, data: [2, 1, 6], rssi: -50)])),
            .le(.extendedAdvertisingReport([LEAdvertisingReport(properties: [.connectable, .scannable, .legacy], address: peer,
                                                                rssi: -60, data: [2, 1, 6])])),
            .le(.dataLengthChange(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)),
            .le(.phyUpdateComplete(status: .success, handle: 0x40, txPHY: .le2M, rxPHY: .le2M)),
            .le(.longTermKeyRequest(handle: 0x40, randomNumber: 0, encryptedDiversifier: 0)),
            .encryptionChange(status: .success, handle: 0x40, enabled: true),
            .le(.periodicAdvertisingSyncEstablished(sync)),
            .le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(syncHandle: 1, rssi: -60, dataStatus: .incompleteMoreToCome, data: [2, 1, 6]))),
            .le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(syncHandle: 1, txPower: 4, rssi: -60, dataStatus: .incompleteTruncated, data: [5, 9, 0x41]))),
            .le(.periodicAdvertisingSyncLost(syncHandle: 1)),
            .le(.periodicAdvertisingSyncTransferReceived(LEPeriodicSyncTransferReceived(connectionHandle: 0x40, serviceData: 7, sync: sync))),
            .le(.channelSelectionAlgorithm(handle: 0x40, algorithm: 1)),
            .le(.scanTimeout),
            .le(.advertisingSetTerminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 1, connectionHandle: 0x40, completedEvents: 3))),
            .le(.scanRequestReceived(advertisingHandle: 1, scanner: peer)),
            .le(.channelSelectionAlgorithm(handle: 0x40, algorithm: 1)),
            .le(.periodicAdvertisingSyncTransferReceived(LEPeriodicSyncTransferReceived(connectionHandle: 0x40, serviceData: 7, sync: sync))),
            .commandComplete(numHCICommandPackets: 1, opcode: .leReadMaximumAdvertisingDataLength, returnParameters: [0, 0x72, 0x06]),
            .unknown(code: 0xFF, parameters: [1, 2, 3]),
        ]
    }()

    static let seedATTPDUs: [ATTPDU] = [
        .errorResponse(requestOpcode: .readByGroupTypeRequest, handle: 0x0001, code: .attributeNotFound),
        .exchangeMTURequest(clientMTU: 517),
        .readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, groupType: GATTUUID.primaryService),
        .readByGroupTypeResponse([ATTGroupData(handle: 1, endGroupHandle: 5, value: [0x00, 0x18]),
                                  ATTGroupData(handle: 6, endGroupHandle: 9, value: [0x0D, 0x18])]),
        .readByTypeResponse([ATTHandleValue(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A])]),
        .findInformationResponse([ATTHandleUUID(handle: 4, uuid: GATTUUID.clientCharacteristicConfiguration)]),
        .findInformationResponse([ATTHandleUUID(handle: 4, uuid: BluetoothUUID(high: 0x1234_5678_1234_5678, low: 0x1234_5678_9ABC_DEF0))]),
        .findByTypeValueResponse([ATTHandleRange(foundHandle: 1, groupEndHandle: 5)]),
        .readMultipleVariableResponse([ATTLengthValue(value: [1, 2]), ATTLengthValue(length: 9, value: [3])]),
        .multipleHandleValueNotification([ATTHandleValue(handle: 3, value: [1]), ATTHandleValue(handle: 5, value: [])]),
        .prepareWriteRequest(handle: 3, offset: 0, value: [1, 2, 3]),
        .signedWriteCommand(handle: 3, value: [1], signature: Array(repeating: 0xAB, count: 12)),
        .readMultipleRequest(handles: [1, 2, 3]),
        .executeWriteRequest(flags: .write),
    ]
}
