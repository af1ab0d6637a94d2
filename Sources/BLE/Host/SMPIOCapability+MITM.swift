import BLEHost

extension SMPIOCapability {
    /// Whether this capability can take part in an authenticated association model with some peer.
    var canProtectMITM: Bool { self != .noInputNoOutput }
}
