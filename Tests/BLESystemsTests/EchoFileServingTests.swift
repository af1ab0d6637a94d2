#if canImport(Glibc)
import BLERuntime
import BLEVirtual
import Glibc
#endif
import BLE
import BLEProfiles
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// `ble serve echo` and file:// URLs: off unless `--files DIR`, and then the regular files under
/// DIR only. Any central in range may send a `U` frame, so this is what keeps it from reading
/// the server's files (`/etc/passwd`, `/proc/self/environ`) to anyone.
final class EchoFileServingTests: XCTestCase {
    /// The default server answers a file:// URL with an error, on the virtual radio.
    func testTheDefaultServerRefusesFileURLs() async throws {
        let reply = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let reply = try await EchoCentral.exchange(.url("file:///etc/passwd"), using: central) { _ in }
            await central.close()
            await server.stop()
            return reply
        }
        XCTAssertEqual(reply, .text("error: file:// URLs are not served; start the server with --files DIR"))
    }

    /// With `--files DIR` a file under DIR comes back, and one outside it does not.
    func testAServerWithADirectoryServesItsFilesOnly() async throws {
        let directory = try temporaryDirectory(for: self)
        try Data("inside".utf8).write(to: directory.appendingPathComponent("a.txt"))
        let profile = try echoServer(serving: directory)
        let real = try XCTUnwrap(ServedDirectory.realPath(of: directory.path))
        let (inside, outside) = try await VirtualWorld.run { world in
            let server = try await world.serve(profile, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let inside = try await EchoCentral.exchange(.url(directory.appendingPathComponent("a.txt").absoluteString), using: central) { _ in }
            let outside = try await EchoCentral.exchange(.url("file:///etc/passwd"), using: central) { _ in }
            await central.close()
            await server.stop()
            return (inside, outside)
        }
        XCTAssertEqual(inside, .image(Array("inside".utf8)))
        XCTAssertEqual(outside, .text("error: cannot serve /etc/passwd: it is outside \(real)"))
    }

    // MARK: The fetcher on its own

    func fetcher(_ directory: URL?, limit: Int = 1000) throws -> ResourceFetcher {
        ResourceFetcher(maximumSize: limit, files: try directory.map { try ServedDirectory($0.path) })
    }

    func fetchError(_ url: String, _ fetcher: ResourceFetcher) async -> FetchError? {
        do {
            _ = try await fetcher.fetch(url)
            return nil
        } catch {
            return error
        }
    }

    func testWithoutADirectoryNoFileURLIsRead() async throws {
        let error = await fetchError("file:///etc/passwd", try fetcher(nil))
        XCTAssertEqual(error, .filesNotServed)
        XCTAssertEqual(error?.description, "file:// URLs are not served; start the server with --files DIR")
    }

    /// Paths out of DIR as written (`..`, also percent-encoded, removed as in any URL) are
    /// refused without looking at the disk; a symlink inside DIR that leads out (to a file, to
    /// a directory above) is refused once resolved.
    func testPathsLeadingOutOfTheDirectoryAreRefused() async throws {
        let directory = try temporaryDirectory(for: self)
        let real = try XCTUnwrap(ServedDirectory.realPath(of: directory.path))
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("escape").path, withDestinationPath: "/etc/hostname")
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("root").path, withDestinationPath: "/")
        let f = try fetcher(directory)
        let base = directory.absoluteString.hasSuffix("/") ? directory.absoluteString : directory.absoluteString + "/"
        for (url, path) in [
            ("file:///etc/passwd", "/etc/passwd"),
            (base + "../x", directory.path + "/../x"),
            (base + "%2e%2e/%2E%2E/etc/passwd", directory.path + "/../../etc/passwd"),
            (base + "escape", directory.path + "/escape"),
            (base + "root/etc/passwd", directory.path + "/root/etc/passwd"),
        ] {
            let error = await fetchError(url, f)
            XCTAssertEqual(error, .outsideServedDirectory(path: path, directory: real), url)
        }
        let error = await fetchError(base + "escape", f)
        XCTAssertEqual(error?.description, "cannot serve \(directory.path)/escape: it is outside \(real)")
    }

    /// A symlink that stays inside DIR is followed.
    func testASymlinkWithinTheDirectoryIsServed() async throws {
        let directory = try temporaryDirectory(for: self)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("linked".utf8).write(to: directory.appendingPathComponent("sub/target.txt"))
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("link").path, withDestinationPath: "sub/target.txt")
        let bytes = try await fetcher(directory).fetch(directory.appendingPathComponent("link").absoluteString)
        XCTAssertEqual(bytes, Array("linked".utf8))
    }

    /// A FIFO would block the reader forever, a directory has no bytes: neither is opened.
    func testOnlyRegularFilesAreServed() async throws {
        let directory = try temporaryDirectory(for: self)
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("null").path, withDestinationPath: "/dev/null")
        let f = try fetcher(directory)
        let fifoError = await fetchError(URL(fileURLWithPath: fifo).absoluteString, f)
        XCTAssertEqual(fifoError, .notRegularFile(path: fifo))
        XCTAssertEqual(fifoError?.description, "cannot serve \(fifo): not a regular file")
        let sub = directory.appendingPathComponent("sub").path
        let subError = await fetchError("file://" + sub, f)
        XCTAssertEqual(subError, .notRegularFile(path: sub))
        let rootError = await fetchError("file://" + directory.path, f)
        XCTAssertEqual(rootError, .notRegularFile(path: directory.path))
        let null = directory.appendingPathComponent("null").path
        let nullError = await fetchError("file://" + null, f)
        XCTAssertEqual(nullError, .outsideServedDirectory(path: null, directory: try XCTUnwrap(ServedDirectory.realPath(of: directory.path))))
    }

    /// Larger than the limit is refused from its size; exactly the limit is served.
    func testTheSizeLimitHolds() async throws {
        let directory = try temporaryDirectory(for: self)
        try Data(repeating: 7, count: 1001).write(to: directory.appendingPathComponent("big"))
        try Data(repeating: 7, count: 1000).write(to: directory.appendingPathComponent("fits"))
        let f = try fetcher(directory, limit: 1000)
        let error = await fetchError(directory.appendingPathComponent("big").absoluteString, f)
        XCTAssertEqual(error, .tooLarge(size: 1001, limit: 1000))
        let fits = try await f.fetch(directory.appendingPathComponent("fits").absoluteString)
        XCTAssertEqual(fits.count, 1000)
    }

    func testAFileURLNamingAnotherHostIsRefused() async throws {
        let directory = try temporaryDirectory(for: self)
        let error = await fetchError("file://example.org" + directory.path + "/a", try fetcher(directory))
        XCTAssertEqual(error, .invalidURL("file://example.org" + directory.path + "/a"))
    }

    /// `--files` must name an existing directory; the server does not start otherwise.
    func testTheDirectoryMustExistAndBeADirectory() throws {
        let directory = try temporaryDirectory(for: self)
        let file = directory.appendingPathComponent("plain")
        try Data().write(to: file)
        XCTAssertThrowsError(try ServedDirectory(file.path)) { error in
            XCTAssertEqual("\(error)", "cannot serve the files of '\(file.path)': not a directory")
        }
        XCTAssertThrowsError(try ServedDirectory(directory.path + "/missing")) { error in
            XCTAssertEqual("\(error)", "cannot serve the files of '\(directory.path)/missing': No such file or directory")
        }
        var profile = EchoServeProfile()
        XCTAssertThrowsError(try profile.configure(ServeProfileOptions(files: file.path))) { error in
            XCTAssertEqual(error as? ServeOptionError, ServeOptionError("--files: cannot serve the files of '\(file.path)': not a directory"))
        }
        try profile.configure(ServeProfileOptions(files: directory.path))
        XCTAssertEqual(profile.files?.realPath, ServedDirectory.realPath(of: directory.path))
    }
}
