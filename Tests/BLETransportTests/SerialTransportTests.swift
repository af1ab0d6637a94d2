#if canImport(Glibc)
import BLERuntime
import Glibc
import Foundation
import XCTest
import BLEHCI
@testable import BLETransport

/// A pseudo-terminal pair: the test plays the controller on the master side, SerialTransport
/// opens the slave as if it were a UART.
private struct PseudoTerminal {
    let master: Int32
    let slavePath: String

    /// posix_openpt/grantpt/unlockpt/ptsname are not imported by Swift's Glibc module, so this is
    /// what they do on Linux: open /dev/ptmx, clear the lock (TIOCSPTLCK), ask the number (TIOCGPTN).
    init() throws {
        let fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw XCTSkip("no pseudo-terminals here (errno \(errno))") }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let tiocsptlck: UInt = 0x4004_5431 // _IOW('T', 0x31, int)
        let tiocgptn: UInt = 0x8004_5430   // _IOR('T', 0x30, unsigned int)
        guard withUnsafeMutablePointer(to: &unlock, { ioctl(fd, tiocsptlck, $0) }) == 0,
              withUnsafeMutablePointer(to: &number, { ioctl(fd, tiocgptn, $0) }) == 0 else {
            close(fd)
            throw XCTSkip("cannot set up a pseudo-terminal (errno \(errno))")
        }
        master = fd
        slavePath = "/dev/pts/\(number)"
    }
}

final class SerialTransportTests: XCTestCase {
    func testFramesBothWaysThroughAPty() async throws {
        let pty = try PseudoTerminal()
        defer { close(pty.master) }
        let transport = try await openTransport(.serial(path: pty.slavePath, baud: 115_200, rtscts: false))
        XCTAssertEqual(transport.description, "serial:\(pty.slavePath)@115200")

        // Controller → host, in awkward pieces (bytes 0x0A/0x0D/0x03 must pass untranslated).
        let bytes = Sample.all.flatMap(\.bytes) + [0x04, 0x0E, 0x04, 0x0A, 0x0D, 0x03, 0x11]
        Peer.write(pty.master, Array(bytes[0..<5]))
        Peer.write(pty.master, Array(bytes[5...]))
        let frames = try await nextFrames(transport, 5)
        XCTAssertEqual(frames, Sample.all + [H4Frame(type: .event, payload: [0x0E, 0x04, 0x0A, 0x0D, 0x03, 0x11])])

        // Host → controller.
        for f in Sample.all { try await transport.send(f) }
        let expected = Sample.all.flatMap(\.bytes)
        let received = try await Peer.offPool { try Peer.read(pty.master, expected.count) }
        XCTAssertEqual(received, expected)
        await transport.close()
        await transport.close()
    }

    func testMasterCloseEndsTheStreamWithError() async throws {
        let pty = try PseudoTerminal()
        let transport = try await SerialTransport.open(path: pty.slavePath)
        XCTAssertEqual(transport.baud, 1_000_000)
        XCTAssertFalse(transport.rtscts)
        close(pty.master)
        let end = try await streamEnding(transport)
        XCTAssertEqual(end?.kind, .peerClosed)
        await transport.close()
    }

    func testRtsctsOptionOpens() async throws {
        let pty = try PseudoTerminal()
        defer { close(pty.master) }
        let transport = try await openTransport(try TransportSpec.parse("serial:\(pty.slavePath)@3000000,rtscts"))
        await transport.close()
    }

    func testOpenErrors() async throws {
        do {
            _ = try await SerialTransport.open(path: "/dev/no-such-tty-\(getpid())")
            XCTFail("opened a missing device")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .openFailed)
            XCTAssertTrue(e.message.contains("no such device /dev/no-such-tty-"), e.message)
        }
        do {
            _ = try await SerialTransport.open(path: "/dev/null")
            XCTFail("opened /dev/null as a tty")
        } catch let e as TransportError {
            XCTAssertTrue(e.message.contains("is not a tty"), e.message)
        }
        let file = tempPath("not-a-tty")
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data(), attributes: [.posixPermissions: 0o000]))
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            _ = try await SerialTransport.open(path: file)
            XCTFail("opened a mode-000 regular file as a tty")
        } catch let e as TransportError {
            // root may open anything, and then finds it is no tty; anyone else is refused.
            let expected = getuid() == 0 ? "is not a tty" : "add your user to the dialout group"
            XCTAssertTrue(e.message.contains(expected), e.message)
        }
        for baud in [9600, 115_200, 921_600, 1_000_000, 4_000_000] {
            XCTAssertNotNil(SerialTransport.speed(for: baud))
        }
        XCTAssertNil(SerialTransport.speed(for: 123))
        XCTAssertTrue(TransportSpec.supportedBauds.allSatisfy { SerialTransport.speed(for: $0) != nil })
    }

    /// The interop suite reaches rootcanal's TCP port through `socat PTY,... TCP:...`: check that
    /// bridge carries frames both ways to a SerialTransport.
    func testSocatBridgesPtyToTCP() async throws {
        guard let socat = findExecutable("socat") else { throw XCTSkip("socat is not installed") }
        let (listener, port) = try Peer.listen()
        defer { close(listener) }
        let link = tempPath("socat-pty")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: socat)
        process.arguments = ["PTY,link=\(link),raw,echo=0", "TCP:127.0.0.1:\(port)"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        defer {
            kill(pid, SIGTERM)
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: link)
        }
        // socat opens its addresses in order: the PTY (and its link) exists before it connects.
        let peer = try Peer.accept(listener, timeout: 10)
        defer { close(peer) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: link), "socat connected before it made \(link)")
        let transport = try await openTransport(.serial(path: link, baud: 1_000_000, rtscts: false))

        for f in Sample.all { try await transport.send(f) }
        let expected = Sample.all.flatMap(\.bytes)
        let atPeer = try await Peer.offPool { try Peer.read(peer, expected.count, timeout: 10) }
        XCTAssertEqual(atPeer, expected)

        Peer.write(peer, Sample.resetComplete.bytes + Sample.advertisingReport.bytes)
        let frames = try await nextFrames(transport, 2, timeout: 10)
        XCTAssertEqual(frames, [Sample.resetComplete, Sample.advertisingReport])
        await transport.close()
    }
}
#endif
