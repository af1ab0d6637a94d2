import BLEHCI
import BLEWire

/// The advertising the host last asked for, kept so it can restart after a connection ends.
struct AdvertisingState {
    var parameters: AdvertisingParameters
    var data: [UInt8]
    var scanResponse: [UInt8]
    /// Whether the controller is advertising now.
    var enabled: Bool
    /// Whether the application wants advertising (false after `stopAdvertising`).
    var wanted: Bool
    /// Bumped by every start, stop and connection, so a restart scheduled before one of them
    /// does nothing after it.
    var generation: UInt64 = 0
}

extension HostController {
    /// Uses a static random address for everything this controller does on the air from now on
    /// (LE Set Random Address, Vol 4 Part E §7.8.4), or goes back to the public address.
    public func setOwnAddress(_ address: OwnAddress) async throws {
        switch address {
        case .public:
            ownAddressType = .public
        case let .staticRandom(a):
            guard a.randomKind == .staticRandom, a != BDAddress(rawValue: 0xFFFF_FFFF_FFFF), a.rawValue & 0x3FFF_FFFF_FFFF != 0 else {
                throw BLEError.invalidArgument("\(a) is not a static random address (the two top bits must be 1, the rest neither all 0 nor all 1)")
            }
            _ = try await commandReturning(.leSetRandomAddress(a))
            ownAddressType = .random
            ownRandomAddress = a
        }
    }

    /// The address peers see.
    public var ownDeviceAddress: DeviceAddress? {
        if ownAddressType == .random, let a = ownRandomAddress { return DeviceAddress(a, type: .random) }
        return info.map { DeviceAddress($0.address, type: .public) }
    }

    /// Starts legacy advertising (Vol 4 Part E §7.8.5–9). The data and scan response must each
    /// fit 31 bytes (Vol 6 Part B §2.3.1.1); longer data is refused with a clear error.
    func startAdvertising(_ parameters: AdvertisingParameters, data: AdvertisingData, scanResponse: AdvertisingData?) async throws {
        if let failure { throw failure }
        let advertisingBytes: [UInt8]
        let responseBytes: [UInt8]
        do {
            advertisingBytes = try data.encode(limit: AdvertisingData.legacyLimit)
            responseBytes = try scanResponse?.encode(limit: AdvertisingData.legacyLimit) ?? []
        } catch {
            throw BLEError.invalidArgument("advertising data: \(error)")
        }
        let (lo, hi) = try parameters.units()
        advertising?.generation &+= 1
        advertising?.wanted = false
        if advertising?.enabled == true {
            _ = try? await commandReturning(.leSetAdvertisingEnable(enable: false))
        }
        _ = try await commandReturning(.leSetAdvertisingParameters(intervalMin: lo, intervalMax: hi, type: parameters.kind.hciType, ownAddressType: ownAddressType))
        _ = try await commandReturning(.leSetAdvertisingData(advertisingBytes))
        _ = try await commandReturning(.leSetScanResponseData(responseBytes))
        _ = try await commandReturning(.leSetAdvertisingEnable(enable: true))
        advertising = AdvertisingState(parameters: parameters, data: advertisingBytes, scanResponse: responseBytes, enabled: true, wanted: true,
                                       generation: (advertising?.generation ?? 0) &+ 1)
    }

    func stopAdvertising() async throws {
        guard var state = advertising else { return }
        state.enabled = false
        state.wanted = false
        state.generation &+= 1
        advertising = state
        _ = try await commandReturning(.leSetAdvertisingEnable(enable: false))
    }

    /// Advertises again after a peripheral-role link starts or ends, if the parameters ask for
    /// it (legacy connectable advertising stops by itself when a connection is made, Vol 6
    /// Part B §4.4.2.2).
    func restartAdvertisingIfWanted(afterConnection: Bool) {
        guard let state = advertising, state.wanted, state.parameters.kind == .connectable, !state.enabled,
              afterConnection ? state.parameters.continueWhileConnected : state.parameters.restartAfterDisconnect else { return }
        let generation = state.generation
        Task(executorPreference: clock.taskExecutor) { await self.restartAdvertising(generation: generation) }
    }

    private func restartAdvertising(generation: UInt64) async {
        // Stopped, restarted or connected meanwhile: this restart is stale.
        guard let current = advertising, current.wanted, !current.enabled, current.generation == generation else { return }
        do {
            _ = try await commandReturning(.leSetAdvertisingEnable(enable: true))
            if advertising?.generation == generation {
                advertising?.enabled = true
                emit(.advertisingStarted)
            }
        } catch {
            log("advertising restart failed: \(error)")
            emit(.advertisingFailed("\(error)"))
        }
    }

    /// A connection as peripheral ends connectable advertising; it may be turned back on.
    func advertisingEndedByConnection() {
        if advertising?.parameters.kind == .connectable {
            advertising?.enabled = false
            advertising?.generation &+= 1
        }
        restartAdvertisingIfWanted(afterConnection: true)
    }
}
