import BLE
import BLESystems

/// `ble info`: what the controller is and what the stack does with it, in the manner of
/// `btmgmt info` and Bumble's `bumble-controller-info`.
struct InfoCommand: BLECommand {
    static let name = "info"
    static let abstract = "Show what the controller is, what it supports, and what the stack will do with it."
    static let options: [CommandOption] = [
        .flag("json", help: "one JSON object instead of text"),
        .flag("all-commands", help: "list every supported command, not only a count per group"),
    ]
    static let needs: CommandNeeds = [.controller]
    static var discussion: String {
        """
        Opens the controller as every command does (HCI Reset, then the reads of Core spec Vol 4 Part E
        §4 and Vol 6 Part D §2) and prints: HCI and LMP versions, manufacturer, public address, LE
        features, supported commands (a count per group, and each command the stack uses marked
        + present or - absent with what the stack does without it), buffers, list sizes, data length,
        advertising sets and PHYs; then the stack's choices. Nothing is sent on the air.

        A REAL ADAPTER (Linux):
          --hci hci0 takes the adapter through the HCI user channel, which needs it down in the kernel
          and no bluetoothd holding it:
            sudo btmgmt --index 0 power off     (or: sudo systemctl stop bluetooth)
            sudo rfkill unblock bluetooth       (when rfkill lists it soft-blocked)
          and CAP_NET_ADMIN (the user channel checks nothing else) rather than root:
            sudo setcap cap_net_admin+ep "$(command -v ble)"
          A UART controller (a Raspberry Pi's built-in chip, an nRF52 running Zephyr's hci_uart) is
          --hci serial:/dev/ttyAMA0@115200 or serial:/dev/ttyACM0@1000000,rtscts once no kernel driver
          holds the port (stop hciuart.service on a Pi). See docs/HARDWARE.md.

        EXAMPLES:
          ble info --hci virtual:4.0
          ble info --hci tcp:127.0.0.1:6402 --json
          sudo ble info --hci hci0
        """
    }

    var controller: ControllerOptions
    var json: Bool
    var allCommands: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
        json = args.flag("json")
        allCommands = args.flag("all-commands")
    }

    func run() async throws {
        let central = try await controller.openCentral()
        let report = ControllerReport(info: central.controllerInfo, configuration: HostConfiguration(),
                                      spec: controller.hci ?? currentEnvironment()["BLE_HCI"])
        await central.close()
        if json {
            print(report.json.text)
        } else {
            print(report.text(allCommands: allCommands), terminator: "")
        }
    }
}
