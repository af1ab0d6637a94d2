#if canImport(Glibc)
import BLERuntime
import Glibc
import Dispatch
import Foundation
import BLEHCI

/// `struct sockaddr_hci` from Linux `include/net/bluetooth/hci_sock.h`: three native-endian
/// 16-bit fields, family (AF_BLUETOOTH = 31), device index, channel. Built as bytes because a
/// Swift struct's layout is not promised to match C's.
struct HCISocketAddress: Hashable, Sendable {
    static let addressFamily: UInt16 = 31      // AF_BLUETOOTH
    static let protocolHCI: Int32 = 1          // BTPROTO_HCI
    static let channelUser: UInt16 = 1         // HCI_CHANNEL_USER
    static let length = 6

    var device: UInt16
    var channel: UInt16

    var bytes: [UInt8] {
        var out: [UInt8] = []
        for field in [Self.addressFamily, device, channel] {
            withUnsafeBytes(of: field) { out.append(contentsOf: $0) }
        }
        return out
    }
}

/// The Linux HCI user channel: exclusive raw access to a local adapter, bypassing the kernel's
/// own Bluetooth stack and bluetoothd (the way Bumble, Zephyr native_sim and BlueZ's btproxy use a
/// real adapter). A SOCK_RAW socket of AF_BLUETOOTH/BTPROTO_HCI bound to `{31, N, 1}`: every
/// read returns one whole packet with its H4 indicator and every write is one whole packet, so
/// no stream decoding is needed.
///
/// The kernel refuses the bind with EBUSY while the adapter is up. By default `open` then tries
/// once to bring it down itself with the legacy HCIDEVDOWN ioctl (`_IOW('H', 202, int)`, what
/// `hciconfig hciN down` does; it needs the same CAP_NET_ADMIN as the bind) and binds again. If
/// bluetoothd powers the adapter straight back up, the second bind fails too and the error says
/// how to take the adapter away from bluetoothd. Pass `bringDownIfBusy: false` to skip that.
public final class HCIUserChannelTransport: HCITransport {
    public let index: UInt16
    private let pump: DescriptorPump<H4Frame>

    static let ioctlHCIDEVDOWN: UInt = 0x4004_48CA

    private init(index: UInt16, fd: Int32) throws {
        self.index = index
        self.pump = try DescriptorPump(fd: fd, name: "hci\(index)", framing: .datagram, isSocket: true)
    }

    public static func open(index: UInt16, bringDownIfBusy: Bool = true) async throws -> HCIUserChannelTransport {
        let fd: Int32 = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                c.resume(with: Result { try openSocket(index: index, bringDownIfBusy: bringDownIfBusy) })
            }
        }
        return try HCIUserChannelTransport(index: index, fd: fd)
    }

    deinit { pump.requestClose(byUser: true) }

    public var incoming: AsyncThrowingStream<H4Frame, any Error> { pump.incoming }
    public func send(_ frame: H4Frame) async throws { try await pump.send(frame.bytes) }
    public func close() async { await pump.close() }
    public var description: String { pump.name }

    private static func openSocket(index: UInt16, bringDownIfBusy: Bool) throws -> Int32 {
        let fd = socket(Int32(HCISocketAddress.addressFamily),
                        Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        HCISocketAddress.protocolHCI)
        if fd < 0 { throw socketFailure(errno: errno, index: index) }
        var e = bind(fd, index: index)
        if e == EBUSY && bringDownIfBusy {
            if ioctl(fd, ioctlHCIDEVDOWN, CInt(index)) == 0 {
                e = bind(fd, index: index)
            } else if errno == EPERM || errno == EACCES {
                e = errno
            }
        }
        if e != 0 {
            POSIX.closeIgnoringErrors(fd)
            throw bindFailure(errno: e, index: index)
        }
        return fd
    }

    /// Binds to the user channel of adapter `index`; returns 0 or the errno.
    private static func bind(_ fd: Int32, index: UInt16) -> Int32 {
        let address = HCISocketAddress(device: index, channel: HCISocketAddress.channelUser).bytes
        let r = address.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return Glibc.bind(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        return r == 0 ? 0 : errno
    }

    static let capabilityAdvice = "needs CAP_NET_ADMIN: run as root or `sudo setcap cap_net_admin+ep \"$(command -v ble)\"` (docs/HARDWARE.md)"

    /// Linux's ERFKILL (132, "Operation not possible due to RF-kill"), which Glibc does not name.
    static let rfkillErrno: Int32 = 132

    static func socketFailure(errno e: Int32, index: UInt16) -> TransportError {
        let name = "hci\(index)"
        switch e {
        case EAFNOSUPPORT:
            return TransportError(.openFailed,
                "\(name): this kernel has no Bluetooth support (AF_BLUETOOTH): load it with `modprobe bluetooth` if available, or use a serial or tcp transport",
                errno: e)
        case EPERM, EACCES:
            return TransportError(.openFailed, "\(name): cannot create a Bluetooth HCI socket: \(capabilityAdvice)", errno: e)
        default:
            return TransportError(.openFailed, "\(name): socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI) failed: \(POSIX.errorText(e))", errno: e)
        }
    }

    static func bindFailure(errno e: Int32, index: UInt16, adapters: [String]? = nil) -> TransportError {
        let name = "hci\(index)"
        switch e {
        case ENODEV:
            let present = adapters ?? listAdapters()
            let list = present.isEmpty ? "no adapters in /sys/class/bluetooth" : "adapters present: \(present.joined(separator: ", "))"
            return TransportError(.openFailed,
                "\(name): no adapter \(name) (\(list)); plug in an adapter (`btmgmt info` lists what the kernel sees), or use --hci virtual",
                errno: e)
        case EPERM, EACCES:
            return TransportError(.openFailed, "\(name): opening the HCI user channel \(capabilityAdvice)", errno: e)
        case EBUSY:
            return TransportError(.openFailed,
                "\(name): \(name) is up/in use by bluetoothd: run `sudo hciconfig \(name) down` or `sudo btmgmt -i \(name) power off` (or stop bluetooth.service) and try again",
                errno: e)
        case rfkillErrno:
            return TransportError(.openFailed,
                "\(name): \(name) is blocked by rfkill: run `sudo rfkill unblock bluetooth` and try again", errno: e)
        case EUSERS:
            return TransportError(.openFailed, "\(name): another program already holds the user channel of \(name) (another ble, btmon -u, a Bumble app): stop it first", errno: e)
        default:
            return TransportError(.openFailed, "\(name): bind to the HCI user channel failed: \(POSIX.errorText(e))", errno: e)
        }
    }

    /// Names under /sys/class/bluetooth (hci0, hci1...), sorted; empty when there are none.
    static func listAdapters() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? []
        return names.filter { $0.hasPrefix("hci") }.sorted()
    }

    /// The indices of the adapters the kernel lists (hci0, hci1, ...), in order.
    public static func adapterIndices() -> [UInt16] {
        listAdapters().compactMap { UInt16($0.dropFirst(3)) }.sorted()
    }
}
#endif
