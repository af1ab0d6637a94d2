import BLEHost
import BLEWire

/// Whether a finished pairing's bond may take the place of the one already kept for the
/// identity it names. A peer chooses the identity address it distributes (Core spec Vol 3 Part
/// H §3.6.5), so a claim is believed only from an address the existing bond knows (its identity,
/// the address it last connected from, or an RPA its IRK resolves); and a pairing the peer set
/// off may not weaken the bond on any axis (authentication, Secure Connections, key size), or
/// anyone in range could replace a Passkey bond with Just Works. An explicit `pair()` by the
/// application may replace the bond of the same device at any level. And an address another
/// bond answers to may not bring a new identity, nor be claimed as one: either would shadow the
/// other bond. Nor may a
/// peer distribute an IRK another bond has, or ours: resolution would attribute RPAs to the
/// wrong device and could block the real bond (Vol 6 Part B §1.3.2.3).
enum BondReplacement: Equatable {
    /// Store the new bond (in place of the old one, if any).
    case store
    /// Keep the old bond; the link goes on with the new key, which is not stored.
    case keep(String)
    /// The identity belongs to another bonded device: refuse the pairing.
    case conflict(String)

    /// `old`: the bond of the identity `new` names, if any; `others`: every other bond.
    static func decide(old: Bond?, others: [Bond] = [], new: Bond, from address: DeviceAddress, explicit: Bool,
                       localIRK: [UInt8]? = nil) -> BondReplacement {
        if let irk = new.resolvingKey {
            if irk == localIRK { return .conflict("\(address) distributed our own IRK as its identity key") }
            if let other = others.first(where: { $0.peerIdentityResolvingKey == irk }) {
                return .conflict("\(address) distributed the IRK of bonded \(other.peer)")
            }
        }
        // An address another bond answers to is that device's: a new identity from it would
        // shadow that bond (the lookup finds bonds by the address a link comes from).
        if let other = others.first(where: { $0.matches(address) }) {
            return .conflict("\(address) belongs to bonded \(other.peer) but claims the identity \(new.peer)")
        }
        // Nor may a peer claim as its identity an address another bond answers to (the address
        // that device connects from): the lookup by that address would find the new bond.
        if let other = others.first(where: { $0.matches(new.peer) }) {
            return .conflict("\(address) claims the identity \(new.peer), an address bonded \(other.peer) connects from")
        }
        guard let old else { return .store }
        guard old.matches(address) else {
            return .conflict("\(address) claims the identity \(new.peer) of a bonded device it cannot be shown to be")
        }
        if explicit { return .store }
        let weaker = (old.authenticated && !new.authenticated) || (old.secureConnections && !new.secureConnections)
            || new.keySize < old.keySize
        if weaker {
            return .keep("a pairing the peer started does not weaken the bond (level \(old.securityLevel.rawValue) to \(new.securityLevel.rawValue))")
        }
        return .store
    }
}
