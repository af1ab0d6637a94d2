import BLE
import BLESystems

/// Pandora's `Security` and `SecurityStorage` services (pandora/security.proto) on the stack.
///
/// Pandora's LE levels and ours: LE_LEVEL1 is any link; LE_LEVEL2 an encrypted one; LE_LEVEL3
/// "paired and encrypted": both reference servers (Android's and Bumble's) count every
/// encrypted LE link as reaching it, and so do we, so a Just Works pairing meets it (our
/// `SecurityLevel` would call it level 2); LE_LEVEL4 is what it says, authenticated LE Secure
/// Connections with a 128-bit key (our `.secureConnections`).
extension PandoraStack {
    /// How Secure and WaitSecurity end (the oneof of SecureResponse / WaitSecurityResponse).
    enum SecurityOutcome: String {
        case success
        case notReached = "not_reached"
        case connectionDied = "connection_died"
        case pairingFailure = "pairing_failure"
        case authenticationFailure = "authentication_failure"
        case encryptionFailure = "encryption_failure"

        var json: JSON { .object([("result", .string(rawValue))]) }
    }

    static func reached(_ level: Int, _ current: SecurityLevel) -> Bool {
        switch level {
        case 1: return true
        case 2, 3: return current >= .encrypted
        default: return current >= .secureConnections
        }
    }

    func securityLevel(_ link: Link) async -> SecurityLevel {
        switch link {
        case let .asCentral(p): return await p.securityLevel
        case let .asPeripheral(c, manager): return await manager.securityLevel(of: c)
        }
    }

    func securityEvents(_ link: Link) async -> AsyncStream<LinkSecurityEvent> {
        switch link {
        case let .asCentral(p): return p.securityEvents
        case let .asPeripheral(c, manager): return await manager.securityEvents(for: c)
        }
    }

    /// Secure: raises the link to `level`: as central by pairing (or, for LE_LEVEL2 with a
    /// bond, by encrypting with its key); as peripheral with a Security Request.
    func secure(_ cookie: UInt64, level: Int) async throws -> SecurityOutcome {
        let r = try record(cookie)
        if r.down { return .connectionDied }
        if Self.reached(level, await securityLevel(r.link)) { return .success }
        do {
            switch r.link {
            case let .asCentral(p):
                let bonded = try await requireCentral().bondedDevices.contains { $0.peer == r.peer || $0.connectionAddress == r.peer }
                if level == 2 && bonded { try await p.encrypt() } else { try await p.pair() }
            case let .asPeripheral(c, manager):
                try await requestSecurity(from: c, of: manager)
            }
        } catch let error as BLEError {
            switch error {
            case .disconnected: return .connectionDied
            case .security(.encryptionFailed): return .encryptionFailure
            case .security, .timeout: return (try record(cookie)).down ? .connectionDied : .pairingFailure
            default: throw error
            }
        }
        return Self.reached(level, await securityLevel(r.link)) ? .success : .notReached
    }

    /// How often, and how many times more, a Security Request the central has not acted on is
    /// sent again.
    static let securityRequestRepeat = (interval: Duration.seconds(1), times: 3)

    /// Sends a Security Request (Vol 3 Part H §3.6.7) and waits until the central has secured
    /// the link. A central may ignore one (§2.4.6); Bumble's Pandora server ignores one that
    /// comes before its WaitSecurity call has begun to listen, which a fast DUT can beat, so
    /// while the link is still unencrypted the request goes again each second, three times at
    /// most (the host sends none while a pairing is under way). Every request ends with the
    /// same pairing.
    private func requestSecurity(from central: ConnectedCentral, of manager: PeripheralManager) async throws {
        let repeats = Task {
            for _ in 0..<Self.securityRequestRepeat.times {
                try await Task.sleep(for: Self.securityRequestRepeat.interval)
                guard await manager.securityLevel(of: central) == .none, !Task.isCancelled else { return }
                // Ends with the same pairing as the first request (or its own SMP timeout).
                _ = try? await manager.requestSecurity(from: central)
            }
        }
        defer { repeats.cancel() }
        // The host's wait ignores cancellation: a Secure whose client went away stops repeating at once.
        _ = try await withTaskCancellationHandler {
            try await manager.requestSecurity(from: central)
        } onCancel: {
            repeats.cancel()
        }
    }

    /// WaitSecurity: waits until the link reaches `level` by whatever the peer or the stack
    /// does (a pairing the peer starts, our answer to its Security Request, encryption with a
    /// bond's key), or until that fails or the link goes.
    func waitSecurity(_ cookie: UInt64, level: Int) async throws -> SecurityOutcome {
        let r = try record(cookie)
        if r.down { return .connectionDied }
        // Watch first, then look: a change between the two is not missed.
        let events = await securityEvents(r.link)
        if Self.reached(level, await securityLevel(r.link)) { return .success }
        for await event in events {
            switch event {
            case .paired, .encrypted:
                if Self.reached(level, await securityLevel(r.link)) { return .success }
            case .pairingFailed:
                return .pairingFailure
            case .encryptionFailed:
                return .encryptionFailure
            }
        }
        // The stream ends with the link.
        return .connectionDied
    }

    /// IsBonded: whether a bond exists with the address (its identity or the address it was
    /// made from); without a type, either type.
    func isBonded(_ request: ControlRequest) async throws -> Bool {
        let matches = try peerMatcher(request)
        return try await requireCentral().bondedDevices.contains { matches($0.peer) || $0.connectionAddress.map(matches) == true }
    }

    /// DeleteBond: forgets the bonds IsBonded would find.
    func deleteBond(_ request: ControlRequest) async throws {
        let matches = try peerMatcher(request)
        let central = try requireCentral()
        for bond in await central.bondedDevices where matches(bond.peer) || bond.connectionAddress.map(matches) == true {
            try await central.removeBond(bond.peer)
        }
    }

    private func peerMatcher(_ request: ControlRequest) throws(ControlError) -> @Sendable (DeviceAddress) -> Bool {
        guard let address = BDAddress(string: try request.string("address")) else {
            throw ControlError(.invalidArgument, "\(request.op): 'address' must be XX:XX:XX:XX:XX:XX")
        }
        let type: AddressType? = switch request.optionalString("addressType") {
        case "public": .public
        case "random": .random
        default: nil
        }
        return { $0.address == address && (type == nil || $0.type == type) }
    }
}
