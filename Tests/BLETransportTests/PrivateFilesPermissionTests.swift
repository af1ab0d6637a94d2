#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
@testable import BLETransport

/// `PrivateFiles.read` on real files: a file another user owns (or any file in a directory
/// another user owns) is refused; a file or directory open to group or others is tightened to
/// 0600 / 0700, and the read says so.
final class PrivateFilesPermissionTests: XCTestCase {
    /// Another uid to give files to; changing a file's owner needs root (or CAP_CHOWN).
    static let stranger: uid_t = 65534

    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-private-\(UUID().uuidString)").path
        try PrivateFiles.ensureDirectory(directory)
        try PrivateFiles.write(Array("secret".utf8), directory: directory, name: "key")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func mode(_ path: String) throws -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { throw PrivateFileError(path: path, message: "stat failed") }
        return info.st_mode & 0o7777
    }

    /// Gives `path` to another user, or skips the test when this process may not.
    private func giveAway(_ path: String) throws {
        guard chown(path, Self.stranger, gid_t(Self.stranger)) == 0 else {
            throw XCTSkip("cannot chown \(path) to uid \(Self.stranger) (needs root): \(String(cString: strerror(errno)))")
        }
    }

    func testAPrivateFileIsReadAsItIs() throws {
        let contents = try XCTUnwrap(try PrivateFiles.read(directory: directory, name: "key"))
        XCTAssertEqual(contents, PrivateFileContents(bytes: Array("secret".utf8), tightened: []))
        XCTAssertEqual(try mode(directory + "/key"), 0o600)
        XCTAssertNil(try PrivateFiles.read(directory: directory, name: "missing"))
    }

    func testAWorldReadableFileIsTightenedAndReported() throws {
        let path = directory + "/key"
        XCTAssertEqual(chmod(path, 0o644), 0)
        let contents = try XCTUnwrap(try PrivateFiles.read(directory: directory, name: "key"))
        XCTAssertEqual(contents.bytes, Array("secret".utf8))
        XCTAssertEqual(contents.tightened, ["\(path): mode 0644 had group/other bits, tightened to 0600"])
        XCTAssertEqual(try mode(path), 0o600)
        // Once tightened, nothing more to say.
        XCTAssertEqual(try PrivateFiles.read(directory: directory, name: "key")?.tightened, [])
    }

    func testAGroupWritableFileIsTightened() throws {
        let path = directory + "/key"
        XCTAssertEqual(chmod(path, 0o620), 0)
        XCTAssertEqual(try PrivateFiles.read(directory: directory, name: "key")?.tightened.count, 1)
        XCTAssertEqual(try mode(path), 0o600)
    }

    func testAnOpenDirectoryIsTightenedAndReported() throws {
        XCTAssertEqual(chmod(directory, 0o755), 0)
        let contents = try XCTUnwrap(try PrivateFiles.read(directory: directory, name: "key"))
        XCTAssertEqual(contents.tightened, ["\(directory): mode 0755 had group/other bits, tightened to 0700"])
        XCTAssertEqual(try mode(directory), 0o700)
    }

    func testEnsureDirectoryReportsWhatItTightened() throws {
        XCTAssertEqual(chmod(directory, 0o750), 0)
        XCTAssertEqual(try PrivateFiles.ensureDirectory(directory), ["\(directory): mode 0750 had group/other bits, tightened to 0700"])
        XCTAssertEqual(try mode(directory), 0o700)
        XCTAssertEqual(try PrivateFiles.ensureDirectory(directory), [])
    }

    func testAFileAnotherUserOwnsIsRefusedAndLeftAlone() throws {
        let path = directory + "/key"
        XCTAssertEqual(chmod(path, 0o644), 0)
        try giveAway(path)
        XCTAssertThrowsError(try PrivateFiles.read(directory: directory, name: "key")) { error in
            XCTAssertTrue("\(error)".contains("owned by uid \(Self.stranger)"), "\(error)")
            XCTAssertTrue("\(error)".hasSuffix("refused"), "\(error)")
        }
        XCTAssertEqual(try mode(path), 0o644, "not ours to change")
    }

    func testADirectoryAnotherUserOwnsIsRefused() throws {
        try giveAway(directory)
        XCTAssertThrowsError(try PrivateFiles.read(directory: directory, name: "key")) { error in
            XCTAssertTrue("\(error)".contains("\(directory): owned by uid \(Self.stranger)"), "\(error)")
        }
        XCTAssertThrowsError(try PrivateFiles.ensureDirectory(directory)) { error in
            XCTAssertTrue("\(error)".contains("refused"), "\(error)")
        }
    }
}
