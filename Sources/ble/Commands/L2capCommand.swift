#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLESystems
import BLEVirtual
import BLEWire
import Synchronization

/// `ble l2cap listen PSM` and `ble l2cap connect ADDRESS PSM`: LE credit-based channels (Core
/// spec Vol 3 Part A §4.22, §10.2), or with `--enhanced` enhanced credit-based ones (§4.25), as
/// a pipe, like netcat.
struct L2capCommand: BLECommand {
    static let name = "l2cap"
    static let abstract = "Move bytes over an LE credit-based L2CAP channel: listen (as a peripheral) or connect."
    static let discussion = """
        ble l2cap listen PSM            advertise, accept channels on PSM; each channel's SDUs go to
                                        stdout (or back to the peer with --echo)
        ble l2cap connect ADDRESS PSM   connect, open a channel on PSM: stdin → channel, channel →
                                        stdout; at the end of stdin the channel closes once the peer
                                        has been silent for --linger seconds. A peer that ends the link
                                        (reason 0x13) after all of stdin went out ends it cleanly too

        A listener accepts both modes (LE credit-based and enhanced credit-based); with --enhanced
        it accepts the enhanced mode only, and connect opens its channel in the enhanced mode
        (Credit Based Connection Request; MTU and MPS at least 64).

        PSM: 1...255, decimal or 0x hex (dynamic SPSMs are 0x0080-0x00FF). The SDUs sent are chunks
        of stdin of up to the peer's MTU. Channel events and totals (with throughput) go to stderr.
        e.g. ble l2cap connect C0:11:22:33:44:55 0x80 < firmware.bin > echoed.bin
        """
    static let positionals: [CommandPositional] = [
        .required("ACTION", help: "listen or connect"),
        .required("PSM|ADDRESS", help: "listen: the PSM; connect: the peer's XX:XX:XX:XX:XX:XX[/public|/random]"),
        .optional("PSM", help: "connect: the PSM"),
    ]
    static let options: [CommandOption] = [
        .single("mtu", value: "N", help: "the largest SDU we take, 23...65535 (default 4096)"),
        .single("mps", value: "N", help: "the largest K-frame we take, 23...65533 (default 247)"),
        .single("credits", value: "N", help: "credits we grant, 1...65535: what may wait unread is credits × MTU (default 16)"),
        .flag("enhanced", help: "the enhanced credit-based mode: connect opens its channel in it, listen accepts only it"),
        .flag("echo", help: "listen: send every SDU back instead of writing it to stdout"),
        .flag("once", help: "listen: exit when the first channel closes"),
        .single("name", value: "NAME", help: "listen: the advertised name (default SwiftBLE)"),
        .single("address", value: "ADDR", help: "listen: a static random address XX:XX:XX:XX:XX:XX (top two bits set) to advertise from (default public)"),
        .single("linger", value: "S", help: "connect: after stdin ends, wait until the peer is silent for S seconds (default 1)"),
        .single("timeout", value: "S", help: "connect: connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .handlesInterrupts, .pairing]

    enum Action {
        case listen(psm: UInt16)
        case connect(AddressArgument, psm: UInt16)
    }

    var controller: ControllerOptions
    var action: Action
    var parameters: CreditBasedChannelParameters
    var enhanced: Bool
    var echo: Bool
    var once: Bool
    var deviceName: String
    var ownAddress: OwnAddress
    var linger: Duration
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, attMTU: false, listening: true)
        let p = args.positionals
        switch p[0] {
        case "listen":
            guard p.count == 2 else { throw UsageError("listen takes one PSM") }
            guard args.option("phy") == nil else { throw UsageError("--phy is for connect: listen advertises, on LE 1M") }
            action = .listen(psm: try Self.psm(p[1]))
        case "connect":
            guard p.count == 3 else { throw UsageError("connect takes an ADDRESS and a PSM") }
            action = .connect(try AddressArgument(p[1]), psm: try Self.psm(p[2]))
        default:
            throw UsageError("unknown action '\(p[0])': listen or connect")
        }
        let mtu = try args.int("mtu") ?? Int(CreditBasedChannelParameters.standard.mtu)
        let mps = try args.int("mps") ?? Int(CreditBasedChannelParameters.standard.mps)
        let credits = try args.int("credits") ?? Int(CreditBasedChannelParameters.standard.initialCredits)
        guard (23...65535).contains(mtu) else { throw UsageError("--mtu must be between 23 and 65535") }
        guard (23...65533).contains(mps) else { throw UsageError("--mps must be between 23 and 65533") }
        guard (1...65535).contains(credits) else { throw UsageError("--credits must be between 1 and 65535") }
        parameters = CreditBasedChannelParameters(mtu: UInt16(mtu), mps: UInt16(mps), initialCredits: UInt16(credits))
        enhanced = args.flag("enhanced")
        if enhanced, !parameters.isValidEnhanced {
            throw UsageError("--enhanced needs --mtu and --mps of at least 64")
        }
        echo = args.flag("echo")
        once = args.flag("once")
        deviceName = args.option("name") ?? "SwiftBLE"
        ownAddress = .public
        if let text = args.option("address") {
            guard let a = BDAddress(string: text), a.randomKind == .staticRandom else {
                throw UsageError("--address expects a static random address XX:XX:XX:XX:XX:XX (top two bits set)")
            }
            ownAddress = .staticRandom(a)
        }
        linger = try args.seconds("linger") ?? .seconds(1)
        timeout = try args.seconds("timeout") ?? .seconds(10)
        if case .connect = action, echo || once || args.option("name") != nil || args.option("address") != nil {
            throw UsageError("--echo, --once, --name and --address apply to listen only")
        }
    }

    static func psm(_ text: String) throws -> UInt16 {
        let value = text.lowercased().hasPrefix("0x") ? UInt16(text.dropFirst(2), radix: 16) : UInt16(text)
        guard let value, (1...255).contains(value) else { throw UsageError("PSM '\(text)' is not 1...255 (decimal or 0x hex)") }
        return value
    }

    func run() async throws {
        switch action {
        case let .listen(psm): try await listen(psm: psm)
        case let .connect(target, psm): try await connect(target, psm: psm)
        }
    }

    private func listen(psm: UInt16) async throws {
        let store = try controller.security.bondStore()
        var configuration = HostConfiguration()
        configuration.security = controller.security.settings(store: store)
        let manager = try await PeripheralManager.open(transport: Controllers.open(spec: controller.hci, capture: controller.capture),
                                                       name: deviceName, address: ownAddress, configuration: configuration)
        do {
            let modes: Set<CreditBasedMode> = enhanced ? [.enhancedCreditBased] : [.leCreditBased, .enhancedCreditBased]
            let listener = try await manager.listenL2CAP(psm: psm, parameters: parameters, modes: modes)
            try await manager.startAdvertising(AdvertisingData.Builder().flags(discoverableFlags).localName(deviceName).build())
            let address = await manager.address
            status("listening on PSM \(psm) (0x\(String(psm, radix: 16)))\(enhanced ? ", enhanced credit-based only," : "") as \"\(deviceName)\" at \(address.map { "\($0)" } ?? "?")")
            let (echo, once) = (echo, once)
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await withTaskGroup(of: Void.self) { channels in
                        for await channel in listener {
                            status("channel from \(channel.peer): \(channel.info)")
                            channels.addTask { await Self.serve(channel, echo: echo) }
                            if once { await channels.next(); return }
                        }
                    }
                }
                group.addTask { _ = await waitForInterrupt(limit: nil) }
                await group.next()
                group.cancelAll()
            }
            try? await manager.stopAdvertising()
            for central in await manager.connectedCentrals { try? await manager.disconnect(central) }
        } catch {
            await manager.close()
            throw error
        }
        await manager.close()
    }

    private static func serve(_ channel: LECreditBasedChannel, echo: Bool) async {
        do {
            if echo {
                let totals = try await L2CAPDescriptorPipe.echo(channel)
                status("closed: \(totals.description)")
            } else {
                let start = ContinuousClock.now
                let (bytes, sdus, last) = try await L2CAPDescriptorPipe.receive(channel, to: STDOUT_FILENO)
                var totals = L2CAPDescriptorPipe.Totals()
                totals.received = bytes
                totals.sdusReceived = sdus
                totals.elapsed = (last ?? start) - start
                status("closed: \(totals.description)")
            }
        } catch {
            status("channel ended: \(error)")
        }
    }

    private func connect(_ target: AddressArgument, psm: UInt16) async throws {
        let central = try await controller.openCentral(target: target)
        do {
            let address = try await target.resolve(using: central)
            let peripheral = try await central.connect(address, timeout: timeout)
            let channel = enhanced
                ? try await Self.first(peripheral.openL2CAPChannels(psm: psm, count: 1, parameters: parameters))
                : try await peripheral.openL2CAPChannel(psm: psm, parameters: parameters)
            status("channel to \(address): \(channel.info)")
            try await pipe(channel)
            try? await peripheral.disconnect()
        } catch {
            await central.close()
            throw error
        }
        await central.close()
    }

    /// The one channel an enhanced request for one opened (it throws when none opened).
    private static func first(_ channels: [LECreditBasedChannel]) throws -> LECreditBasedChannel {
        guard let channel = channels.first else { throw BLEError.l2cap(.refused(.noResourcesAvailable)) }
        return channel
    }

    /// stdin → channel and channel → stdout at once, until the channel ends (either side closes
    /// it, or the link goes): at the end of stdin it lingers until the peer is quiet, then
    /// closes; Ctrl-C closes at once. Prints the totals, then throws why the channel ended if
    /// that was not a close, nor the peer ending the link on purpose once all of stdin had gone
    /// out (a peer that has what it wanted may just disconnect, Vol 1 Part F §2.19).
    private func pipe(_ channel: LECreditBasedChannel) async throws {
        enum Ended: Sendable { case channel((any Error)?), other }
        let counters = PipeCounters()
        let linger = linger
        let ended: (any Error)? = await withTaskGroup(of: Ended.self) { group in
            group.addTask {
                do {
                    _ = try await L2CAPDescriptorPipe.receive(channel, to: STDOUT_FILENO) { counters.received(total: $0) }
                    return .channel(nil)
                } catch {
                    return .channel(error)
                }
            }
            group.addTask {
                let input = L2CAPDescriptorPipe.chunks(fd: STDIN_FILENO, size: min(channel.peerMTU, 65535))
                // A send that fails means the channel ended; the reader reports why.
                if (try? await L2CAPDescriptorPipe.send(input, on: channel) { counters.sent($0) }) != nil { counters.inputSent() }
                counters.startLinger()
                while !Task.isCancelled, ContinuousClock.now - counters.lastActivity < linger {
                    try? await Task.sleep(for: .milliseconds(50))
                }
                if !Task.isCancelled { await channel.close() }
                return .other
            }
            group.addTask {
                if await waitForInterrupt(limit: nil) { await channel.close() }
                return .other
            }
            for await outcome in group {
                if case let .channel(error) = outcome {
                    group.cancelAll()
                    return error
                }
            }
            return nil
        }
        status("closed: \(counters.totals.description)")
        guard let ended else { return }
        if counters.allInputSent, L2CAPDescriptorPipe.isDeliberateDisconnect(ended) {
            status("the peer disconnected after all of stdin went out")
            return
        }
        throw ended
    }
}

/// What a pipe moved, across its tasks: bytes and SDUs each way, when the first and the last
/// moved, and when the peer was last heard (for the linger).
private final class PipeCounters: Sendable {
    private struct State {
        var totals = L2CAPDescriptorPipe.Totals()
        var start = ContinuousClock.now
        var lastMoved: ContinuousClock.Instant?
        var lastActivity = ContinuousClock.now
        var allInputSent = false
    }
    private let state = Mutex(State())

    /// One more SDU of `bytes` sent.
    func sent(_ bytes: Int) {
        state.withLock { s in
            s.totals.sent += bytes
            s.totals.sdusSent += 1
            s.lastMoved = ContinuousClock.now
        }
    }

    /// One more SDU received, `total` bytes so far.
    func received(total: Int) {
        state.withLock { s in
            s.totals.received = total
            s.totals.sdusReceived += 1
            s.lastMoved = ContinuousClock.now
            s.lastActivity = ContinuousClock.now
        }
    }

    /// Every chunk of the input has been sent.
    func inputSent() { state.withLock { $0.allInputSent = true } }

    var allInputSent: Bool { state.withLock { $0.allInputSent } }

    /// The linger starts now.
    func startLinger() { state.withLock { $0.lastActivity = ContinuousClock.now } }

    var lastActivity: ContinuousClock.Instant { state.withLock { $0.lastActivity } }

    /// The totals, timed from the channel's opening to the last byte moved either way.
    var totals: L2CAPDescriptorPipe.Totals {
        state.withLock { s in
            var t = s.totals
            t.elapsed = (s.lastMoved ?? s.start) - s.start
            return t
        }
    }
}

/// A status line on stderr (stdout carries the channel's bytes).
private func status(_ text: String) {
    standardError(text)
}
