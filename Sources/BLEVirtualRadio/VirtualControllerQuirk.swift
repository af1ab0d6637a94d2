import BLEHCI

/// Misbehaviours of real controllers that public host stacks document and work around, which a
/// virtual controller reproduces when its configuration lists them
/// (`VirtualControllerConfiguration.quirks`), so tests prove the host copes: a typed error and
/// recovery, never a hang or a crash. Each case names the public source that documents it.
public enum VirtualControllerQuirk: Hashable, Sendable {
    /// LE Read Buffer Size answers 0 octets × 0 packets: LE shares the BR/EDR ACL buffers, which
    /// Read Buffer Size reports (Core spec Vol 4 Part E §7.8.2). Hosts must fall back to them:
    /// Bumble `bumble/host.py` `reset()`, Linux `net/bluetooth/hci_event.c` (`le_pkts == 0`).
    case sharedACLBuffers
}
