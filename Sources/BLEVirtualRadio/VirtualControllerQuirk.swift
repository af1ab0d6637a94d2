import BLEHCI

/// Misbehaviours of real controllers that public host stacks document and work around, which a
/// virtual controller reproduces when its configuration lists them
/// (`VirtualControllerConfiguration.quirks`), so tests prove the host copes: a typed error and
/// recovery, never a hang or a crash. Each case names the public source that documents it.
/// The behaviour lives in VirtualController+Quirks.swift; a controller without quirks takes
/// none of those paths.
public enum VirtualControllerQuirk: Hashable, Sendable {
    /// LE Read Buffer Size (v1 and v2) answers 0 octets × 0 packets: LE shares the BR/EDR ACL
    /// buffers, which Read Buffer Size reports (Core spec Vol 4 Part E §7.4.5, §7.8.2) with the
    /// configuration's `leACLBufferLength` and `leACLBufferCount`. Hosts must fall back to them:
    /// Bumble `bumble/host.py` `reset()`, Linux `net/bluetooth/hci_event.c` (`le_pkts == 0`).
    case sharedACLBuffers

    /// After each Disconnection Complete (the host's Disconnect, or the link lost) the
    /// controller also reports Number Of Completed Packets for the dead handle with `count`
    /// packets: 1, or more than could have been in flight. Hosts ignore the unknown handle and
    /// clamp their credits at the buffer count: Linux `net/bluetooth/hci_event.c`
    /// `hci_num_comp_pkts_evt` and `net/bluetooth/hci_conn.c` `hci_conn_del`; Bumble
    /// `bumble/host.py` `on_hci_number_of_completed_packets_event`; NimBLE
    /// `nimble/host/src/ble_hs_hci_evt.c` `ble_hs_hci_evt_num_completed_pkts`.
    case completedPacketsAfterDisconnection(count: UInt16)

    /// After its Reset completed, the controller answers the first `replacing` command with
    /// another, unsolicited Command Complete for Reset and never answers that command. Linux
    /// `net/bluetooth/hci_core.c` `hci_req_cmd_complete` (helper `hci_resend_last`) documents
    /// this of some CSR controllers during init and resends the pending command.
    case spontaneousResetComplete(replacing: HCIOpcode)

    /// The very first command after the controller powers on gets no answer at all (HCI
    /// Reset, from a host that starts with it); the next one is answered. No chip-specific
    /// public source pins this down: the nearest are `bluekitchen/btstack` pull request #278
    /// (a BCM20702A dongle that "never responds to the HCI reset during initialization") and
    /// BTstack's `hci.c` `HCI_RESET_RESEND_TIMEOUT_MS`, which resends HCI Reset when it goes
    /// unanswered.
    case losesFirstCommand

    /// After Reset the controller also sends a Command Complete for No Operation (opcode
    /// 0x0000, no return parameters) that only grants command credits (Vol 4 Part E §7.7.14).
    /// Bumble `bumble/host.py` `on_hci_command_complete_event`, NimBLE
    /// `nimble/host/src/ble_hs_hci.c` `ble_hs_hci_rx_cmd_complete`, Linux `HCI_OP_NOP`.
    case creditOnlyCommandComplete

    /// Every Command Complete is sent twice: the second answers a command that is no longer
    /// pending, and must not satisfy the host's next command with the same opcode. Zephyr
    /// `subsys/bluetooth/host/hci_core.c` `hci_cmd_done`, NimBLE `nimble/host/src/ble_hs_hci.c`
    /// `ble_hs_hci_process_ack`, Bumble `bumble/host.py` `on_command_processed`.
    case duplicateCommandComplete

    /// A command the controller lacks (or `listedButUnknown`) is answered with Command Status
    /// Unknown HCI Command (0x01) instead of Command Complete. Bumble `bumble/host.py`
    /// `send_sync_command_raw` ("some controllers return Command Status instead of Command
    /// Complete"); the Actions ATS2851 btmon log in `bluez/bluetooth-next` pull request #9.
    case unknownCommandAsCommandStatus

    /// These commands stay in Supported_Commands but are answered Unknown HCI Command (0x01).
    /// Linux `include/net/bluetooth/hci.h` `HCI_QUIRK_BROKEN_SET_RPA_TIMEOUT`,
    /// `HCI_QUIRK_BROKEN_READ_TRANSMIT_POWER`, `HCI_QUIRK_BROKEN_EXT_CREATE_CONN`,
    /// `HCI_QUIRK_BROKEN_ERR_DATA_REPORTING`; `bluez/bluetooth-next` pull request #9 (ATS2851).
    case listedButUnknown(Set<HCIOpcode>)

    /// LE Connection Update gets Command Status Success, but the procedure never runs and no
    /// LE Connection Update Complete follows. No chip-specific source: public hosts bound such
    /// procedures with generic timeouts only (Linux `HCI_LE_CONN_TIMEOUT`; the Link Layer's
    /// 40 s procedure response timeout, Core spec Vol 6 Part B §5.2).
    case silentConnectionUpdate

    /// Legacy LE Advertising Reports carry RSSI 127, "not available" (Vol 4 Part E §7.7.65.2;
    /// Linux `HCI_RSSI_INVALID`).
    case advertisingReportsWithoutRSSI

    /// After each legacy LE Advertising Report the controller sends a malformed one for the
    /// same advertiser whose Data_Length (31) runs past the end of the event. Linux
    /// `net/bluetooth/hci_event.c` `hci_le_adv_report_evt` ("Dropping invalid advertising
    /// data"), NimBLE `nimble/host/src/ble_hs_hci_evt.c` `ble_hs_hci_evt_le_adv_rpt_first_pass`.
    case malformedAdvertisingReports

    /// After a Disconnection Complete the controller still delivers one ACL packet (an ATT
    /// Read Request on the ATT channel) for the dead handle, as if the link's last data came
    /// late. `espressif/esp-idf` issue #7031 and `apache/mynewt-nimble` pull request #2094 treat
    /// data on a just-disconnected handle as dropped, the link as dead from its Disconnection
    /// Complete on.
    case aclAfterDisconnection
}
