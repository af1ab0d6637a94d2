#if canImport(Glibc)
import BLERuntime
import Glibc
import Dispatch
import BLEHCI

/// H4 over a UART (Core spec Vol 4 Part A): a USB serial HCI dongle, a board running Zephyr's
/// `hci_uart`, or a pty bridged by socat. The line is raw 8N1; hardware flow control (RTS/CTS)
/// is off unless asked for with `serial:PATH@BAUD,rtscts`, because many adapters and every
/// pty/socat bridge leave CTS unwired, which with CRTSCTS on would stall every write. Core spec
/// Vol 4 Part A §1 recommends RTS/CTS on a real UART: turn it on for dongles that wire it.
public final class SerialTransport: HCITransport {
    public let path: String
    public let baud: Int
    public let rtscts: Bool
    private let pump: DescriptorPump<H4Frame>

    private init(path: String, baud: Int, rtscts: Bool, fd: Int32) throws {
        self.path = path
        self.baud = baud
        self.rtscts = rtscts
        self.pump = try DescriptorPump(fd: fd, name: TransportSpec.serial(path: path, baud: baud, rtscts: rtscts).description,
                                       framing: .stream, isSocket: false)
    }

    /// Opens and configures the tty. The open, tcsetattr and flush run on a Dispatch thread
    /// (a tty open can block on some drivers), not on the Swift concurrency pool.
    public static func open(path: String, baud: Int = TransportSpec.defaultBaud, rtscts: Bool = false) async throws -> SerialTransport {
        let fd: Int32 = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                c.resume(with: Result { try openTTY(path: path, baud: baud, rtscts: rtscts) })
            }
        }
        return try SerialTransport(path: path, baud: baud, rtscts: rtscts, fd: fd)
    }

    deinit { pump.requestClose(byUser: true) }

    public var incoming: AsyncThrowingStream<H4Frame, any Error> { pump.incoming }
    public func send(_ frame: H4Frame) async throws { try await pump.send(frame.bytes) }
    public func close() async { await pump.close() }
    public var description: String { pump.name }

    /// termios speed constant for a baud rate (Linux: B0...B4000000, no BOTHER custom rates).
    static func speed(for baud: Int) -> speed_t? {
        switch baud {
        case 1200: return speed_t(B1200)
        case 2400: return speed_t(B2400)
        case 4800: return speed_t(B4800)
        case 9600: return speed_t(B9600)
        case 19200: return speed_t(B19200)
        case 38400: return speed_t(B38400)
        case 57600: return speed_t(B57600)
        case 115_200: return speed_t(B115200)
        case 230_400: return speed_t(B230400)
        case 460_800: return speed_t(B460800)
        case 500_000: return speed_t(B500000)
        case 576_000: return speed_t(B576000)
        case 921_600: return speed_t(B921600)
        case 1_000_000: return speed_t(B1000000)
        case 1_152_000: return speed_t(B1152000)
        case 1_500_000: return speed_t(B1500000)
        case 2_000_000: return speed_t(B2000000)
        case 2_500_000: return speed_t(B2500000)
        case 3_000_000: return speed_t(B3000000)
        case 3_500_000: return speed_t(B3500000)
        case 4_000_000: return speed_t(B4000000)
        default: return nil
        }
    }

    /// CRTSCTS is 0o20000000000 on Linux; spelled out because the C macro does not import as a
    /// `tcflag_t`.
    static let crtscts: tcflag_t = 0o20000000000

    private static func openTTY(path: String, baud: Int, rtscts: Bool) throws -> Int32 {
        let target = TransportSpec.serial(path: path, baud: baud, rtscts: rtscts).description
        guard let speed = speed(for: baud) else {
            throw TransportError(.invalidSpec, "\(target): unsupported baud rate \(baud)")
        }
        // O_NOCTTY: a dongle must never become our controlling terminal. O_NONBLOCK: do not wait
        // for carrier detect on modem-style lines (and the pump wants it anyway).
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            let e = errno
            switch e {
            case ENOENT, ENODEV, ENXIO:
                throw TransportError(.openFailed, "\(target): no such device \(path) (is the adapter plugged in? see `ls /dev/ttyUSB* /dev/ttyACM*`)", errno: e)
            case EACCES, EPERM:
                throw TransportError(.openFailed,
                    "\(target): permission denied opening \(path): add your user to the dialout group (`sudo usermod -aG dialout $USER`, then log in again)",
                    errno: e)
            case EBUSY:
                throw TransportError(.openFailed, "\(target): \(path) is busy (another program has it open: a kernel HCI driver attached with btattach/hciattach, hciuart.service on a Raspberry Pi — `sudo systemctl stop hciuart` — or a serial terminal)", errno: e)
            default:
                throw TransportError(.openFailed, "\(target): cannot open \(path): \(POSIX.errorText(e))", errno: e)
            }
        }
        func fail(_ what: String) -> TransportError {
            let e = errno
            POSIX.closeIgnoringErrors(fd)
            if e == ENOTTY || e == EINVAL && what == "tcgetattr" {
                return TransportError(.openFailed, "\(target): \(path) is not a tty (serial: needs a serial device or a pty)", errno: e)
            }
            return TransportError(.openFailed, "\(target): \(what) on \(path) failed: \(POSIX.errorText(e))", errno: e)
        }
        if isatty(fd) == 0 {
            errno = ENOTTY
            throw fail("isatty")
        }
        var t = termios()
        if tcgetattr(fd, &t) != 0 { throw fail("tcgetattr") }
        // Raw: no echo, no line editing, no CR/LF translation, no signals; then 8N1.
        cfmakeraw(&t)
        t.c_cflag |= tcflag_t(CLOCAL | CREAD)
        t.c_cflag &= ~tcflag_t(CSIZE | PARENB | CSTOPB)
        t.c_cflag |= tcflag_t(CS8)
        if rtscts { t.c_cflag |= crtscts } else { t.c_cflag &= ~crtscts }
        t.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
        withUnsafeMutableBytes(of: &t.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        if cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0 { throw fail("cfsetspeed") }
        if tcsetattr(fd, TCSANOW, &t) != 0 { throw fail("tcsetattr") }
        // Drop whatever the line held before we owned it (a half frame would desync us).
        _ = tcflush(fd, TCIOFLUSH)
        return fd
    }
}
#endif
