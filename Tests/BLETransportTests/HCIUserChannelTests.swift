#if canImport(Glibc)
import BLERuntime
import Glibc
import XCTest
@testable import BLETransport

final class HCIUserChannelTests: XCTestCase {
    func testSockaddrLayout() {
        // struct sockaddr_hci { sa_family_t hci_family; unsigned short hci_dev, hci_channel; }
        let a = HCISocketAddress(device: 0, channel: HCISocketAddress.channelUser)
        XCTAssertEqual(a.bytes.count, HCISocketAddress.length)
        XCTAssertEqual(a.bytes, [31, 0, 0, 0, 1, 0]) // little-endian hosts (x86-64, arm64)
        XCTAssertEqual(HCISocketAddress(device: 0x0102, channel: 1).bytes, [31, 0, 0x02, 0x01, 1, 0])
    }

    func testIoctlNumber() {
        // _IOW('H', 202, int): direction write (1) << 30 | size 4 << 16 | type 'H' << 8 | nr 202.
        let value = UInt(1) << 30 | UInt(MemoryLayout<Int32>.size) << 16 | UInt(UInt8(ascii: "H")) << 8 | 202
        XCTAssertEqual(HCIUserChannelTransport.ioctlHCIDEVDOWN, value)
    }

    /// This machine has no adapter (and possibly no AF_BLUETOOTH): whatever the kernel says, the
    /// error names the adapter and one of the known cases.
    func testOpenWithoutAdapterExplainsWhy() async {
        do {
            let t = try await openTransport(.hciUserChannel(index: 0))
            await t.close()
            throw XCTSkip("an hci0 adapter is present and usable here")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .openFailed)
            let known = ["no Bluetooth support (AF_BLUETOOTH)", "no adapter hci0", "CAP_NET_ADMIN",
                         "in use by bluetoothd", "already holds the user channel"]
            XCTAssertTrue(e.message.hasPrefix("hci0: "), e.message)
            XCTAssertTrue(known.contains { e.message.contains($0) }, e.message)
        } catch {
            XCTFail("\(error)")
        }
    }

    func testFailureMessages() {
        XCTAssertTrue(HCIUserChannelTransport.socketFailure(errno: EAFNOSUPPORT, index: 0).message
            .contains("this kernel has no Bluetooth support (AF_BLUETOOTH)"))
        let nodev = HCIUserChannelTransport.bindFailure(errno: ENODEV, index: 2, adapters: ["hci0", "hci1"])
        XCTAssertTrue(nodev.message.hasPrefix("hci2: no adapter hci2 (adapters present: hci0, hci1); plug in an adapter"), nodev.message)
        XCTAssertTrue(nodev.message.contains("--hci virtual"), nodev.message)
        XCTAssertTrue(HCIUserChannelTransport.bindFailure(errno: ENODEV, index: 0, adapters: []).message
            .contains("no adapters in /sys/class/bluetooth"))
        for e in [EPERM, EACCES] {
            XCTAssertTrue(HCIUserChannelTransport.bindFailure(errno: e, index: 0).message
                .contains("needs CAP_NET_ADMIN: run as root or `sudo setcap cap_net_admin+ep"))
        }
        let busy = HCIUserChannelTransport.bindFailure(errno: EBUSY, index: 1).message
        XCTAssertTrue(busy.contains("hci1 is up/in use by bluetoothd"), busy)
        XCTAssertTrue(busy.contains("sudo hciconfig hci1 down"), busy)
        XCTAssertTrue(busy.contains("btmgmt -i hci1 power off"), busy)
        XCTAssertTrue(busy.contains("bluetooth.service"), busy)
        let blocked = HCIUserChannelTransport.bindFailure(errno: HCIUserChannelTransport.rfkillErrno, index: 0).message
        XCTAssertTrue(blocked.contains("sudo rfkill unblock bluetooth"), blocked)
        let held = HCIUserChannelTransport.bindFailure(errno: EUSERS, index: 0).message
        XCTAssertTrue(held.contains("stop it first"), held)
    }
}
#endif
