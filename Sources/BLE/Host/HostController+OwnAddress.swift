import BLEHCI
import BLEWire

// The driver's own address setting (`OwnAddressSetting`): set by the application, by privacy
// (`useRandomAddress`), read by every part that goes on the air.

extension HostController {
    /// Uses a static random address for everything this controller does on the air from now
    /// on, or goes back to the public address.
    func setOwnAddress(_ address: OwnAddress) async throws {
        switch address {
        case .public:
            // A controller without a public address answers Read BD_ADDR with zero (Core spec
            // Vol 4 Part E §7.4.6; Bumble's own controller does): nobody could answer that
            // address, so go on the air with the local identity's static random address.
            if info?.address.rawValue == 0 {
                guard let identity = security.localIdentity(self) else {
                    throw BLEError.unsupported("the controller has no public address, and no local identity could be read or made for a static random one")
                }
                log("the controller has no public address (Read BD_ADDR: 00:00:00:00:00:00): using the static random \(identity.address)")
                try await setOwnAddress(.staticRandom(identity.address))
                return
            }
            privacy.stop()
            ownAddress = OwnAddressSetting(type: .public)
        case let .staticRandom(a):
            try OwnAddressSetting.validateStaticRandom(a)
            privacy.stop()
            try await commandReturning(.leSetRandomAddress(a))
            ownAddress = OwnAddressSetting(type: .random, random: a)
        case let .resolvablePrivate(rotation):
            guard let identity = security.localIdentity(self) else {
                throw BLEError.security(.unavailable("privacy needs a local identity (IRK), and none could be read or made"))
            }
            try await privacy.start(rotation: rotation, irk: identity.identityResolvingKey, self)
            ownAddress.identity = DeviceAddress(identity.address, type: .random)
        }
    }

    /// The address peers see.
    var ownDeviceAddress: DeviceAddress? {
        if ownAddress.type == .random, let a = ownAddress.random { return DeviceAddress(a, type: .random) }
        return info.map { DeviceAddress($0.address, type: .public) }
    }
}
