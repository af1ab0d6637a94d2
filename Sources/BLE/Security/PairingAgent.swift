import BLEHost
import BLEWire

/// The user's side of pairing: what CoreBluetooth leaves to iOS's own dialogs. Each method is
/// called on the host's behalf while a pairing waits for the answer (the 30-second SMP timer
/// runs meanwhile, Core spec Vol 3 Part H §3.4).
public protocol PairingAgent: Sendable {
    /// Show `passkey` (six digits, zero-filled) to the user, who types it on `peer`.
    func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async
    /// Ask the user for the passkey `peer` shows; nil when the user cancels (Pairing Failed
    /// "Passkey Entry Failed").
    func enterPasskey(for peer: DeviceAddress) async -> UInt32?
    /// Show `value` and ask whether `peer` shows the same six digits (Numeric Comparison).
    func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool
    /// Whether to accept a Just Works pairing with `peer` (asked when
    /// `SMPPairingSettings.confirmsJustWorks` is set); false ends it.
    func confirmJustWorks(for peer: DeviceAddress) async -> Bool
    /// Whether to pair with `peer` at all (asked when `SecuritySettings.asksApproval` is set).
    func approvePairing(with peer: DeviceAddress, features: SMPPairingFeatures) async -> Bool
    /// True when `confirmNumericComparison` answers without a person comparing the numbers (a
    /// fixed answer). Such a comparison authenticates nothing, so a pairing the peer started
    /// may not replace an existing bond with it (Pairing Failed, Authentication Requirements,
    /// `SMPPairingError.existingBondKept`), as with Just Works.
    var confirmsWithoutAPerson: Bool { get }
}

extension PairingAgent {
    /// Default: shows nothing.
    public func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async {}
    /// Default: nil, which cancels: pairing fails with Passkey Entry Failed.
    public func enterPasskey(for peer: DeviceAddress) async -> UInt32? { nil }
    /// Default: false, which refuses: pairing fails with Numeric Comparison Failed.
    public func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool { false }
    /// Default: true, so Just Works goes on.
    public func confirmJustWorks(for peer: DeviceAddress) async -> Bool { true }
    /// Default: true, so every peer may pair.
    public func approvePairing(with peer: DeviceAddress, features: SMPPairingFeatures) async -> Bool { true }
    /// Default: false. The default `confirmNumericComparison` accepts nothing, and one that
    /// accepts must show the number to a person, as the method's contract says; an agent
    /// that answers by itself says true.
    public var confirmsWithoutAPerson: Bool { false }
}

/// An agent with fixed answers: a passkey to type (or to show, when this side displays one of
/// its own choosing is not needed) and a numeric-comparison answer. What `ble pair --passkey
/// --confirm` and the tests use.
public struct FixedPairingAgent: PairingAgent {
    /// Typed when asked for a passkey; nil cancels.
    public var passkey: UInt32?
    /// The answer to a numeric comparison.
    public var confirms: Bool
    /// Called with each passkey this side displays.
    public var onDisplay: @Sendable (UInt32, DeviceAddress) -> Void

    /// An agent that types `passkey`, answers numeric comparisons with `confirms`, and calls
    /// `onDisplay` for each passkey it is asked to show.
    public init(passkey: UInt32? = nil, confirms: Bool = false, onDisplay: @escaping @Sendable (UInt32, DeviceAddress) -> Void = { _, _ in }) {
        self.passkey = passkey
        self.confirms = confirms
        self.onDisplay = onDisplay
    }

    /// Hands the passkey to `onDisplay`.
    public func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async { onDisplay(passkey, peer) }
    /// The fixed `passkey`; nil cancels.
    public func enterPasskey(for peer: DeviceAddress) async -> UInt32? { passkey }
    /// The fixed answer, `confirms`, whatever the value.
    public func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool { confirms }
    /// True: nobody compares the numbers.
    public var confirmsWithoutAPerson: Bool { true }
}
