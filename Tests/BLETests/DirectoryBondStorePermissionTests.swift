#if canImport(Glibc)
import Glibc
#endif
import BLE
import Foundation
import XCTest

/// The bond store on real files with wrong modes or owners: a bond or identity file another
/// user owns is refused (a problem, like a corrupt file, never a crash); files and the directory
/// that group or others could reach are tightened to 0600 / 0700 and reported.
final class DirectoryBondStorePermissionTests: XCTestCase {
    static let stranger: uid_t = 65534
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)").path
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var bondPath: String { directory + "/C0-11-22-33-44-55-random.bond" }
    private var identityPath: String { directory + "/identity" }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0xFFFF }
        return info.st_mode & 0o7777
    }

    private func giveAway(_ path: String) throws {
        guard chown(path, Self.stranger, gid_t(Self.stranger)) == 0 else {
            throw XCTSkip("cannot chown \(path) to uid \(Self.stranger) (needs root): \(String(cString: strerror(errno)))")
        }
    }

    /// A store with one bond and an identity, written as the store writes them (0600 in 0700).
    private func populated() throws -> DirectoryBondStore {
        let store = try DirectoryBondStore(directory: directory)
        try store.save(Bond(peer: peer, peerLongTermKey: Array(repeating: 7, count: 16), secureConnections: true, authenticated: false, keySize: 16))
        _ = try store.localIdentity()
        XCTAssertEqual(mode(bondPath), 0o600)
        XCTAssertEqual(mode(identityPath), 0o600)
        XCTAssertEqual(store.problems(), [])
        return store
    }

    func testAWorldReadableBondIsTightenedUsedAndReported() throws {
        _ = try populated()
        XCTAssertEqual(chmod(bondPath, 0o644), 0)
        let store = try DirectoryBondStore(directory: directory)
        let bonds = try store.bonds()
        XCTAssertEqual(bonds.map(\.peer), [peer], "still used: it is ours")
        XCTAssertEqual(store.problems(), ["\(bondPath): mode 0644 had group/other bits, tightened to 0600"])
        XCTAssertEqual(mode(bondPath), 0o600)
        _ = try store.bonds()
        XCTAssertEqual(store.problems(), [], "tightened once, reported once")
    }

    func testABondAnotherUserOwnsIsSkippedAsAProblem() throws {
        _ = try populated()
        try giveAway(bondPath)
        let store = try DirectoryBondStore(directory: directory)
        XCTAssertEqual(try store.bonds(), [])
        let problems = store.problems()
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(problems.first?.contains("owned by uid \(Self.stranger)") ?? false, "\(problems)")
        XCTAssertTrue(problems.first?.hasSuffix("skipped") ?? false, "\(problems)")
    }

    func testAGroupReadableIdentityIsTightenedAndReported() throws {
        let first = try populated().localIdentity()
        XCTAssertEqual(chmod(identityPath, 0o640), 0)
        let store = try DirectoryBondStore(directory: directory)
        XCTAssertEqual(try store.localIdentity(), first)
        XCTAssertEqual(store.problems(), ["\(identityPath): mode 0640 had group/other bits, tightened to 0600"])
        XCTAssertEqual(mode(identityPath), 0o600)
    }

    func testAnIdentityAnotherUserOwnsIsAnErrorNotReplaced() throws {
        _ = try populated()
        let before = try Data(contentsOf: URL(fileURLWithPath: identityPath))
        try giveAway(identityPath)
        let store = try DirectoryBondStore(directory: directory)
        XCTAssertThrowsError(try store.localIdentity()) { error in
            XCTAssertTrue("\(error)".contains("owned by uid \(Self.stranger)"), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: identityPath)), before, "kept as it was")
    }

    func testAnOpenDirectoryIsTightenedWhenOpenedAndReported() throws {
        XCTAssertEqual(mkdir(directory, 0o755), 0)
        XCTAssertEqual(chmod(directory, 0o755), 0)
        let store = try DirectoryBondStore(directory: directory)
        XCTAssertEqual(mode(directory), 0o700)
        XCTAssertEqual(store.problems(), ["\(directory): mode 0755 had group/other bits, tightened to 0700"])
        // Opened up again behind the store's back: the next read tightens and reports it.
        try store.save(Bond(peer: peer, peerLongTermKey: Array(repeating: 7, count: 16), secureConnections: true, authenticated: false, keySize: 16))
        XCTAssertEqual(chmod(directory, 0o711), 0)
        XCTAssertEqual(try store.bonds().count, 1)
        XCTAssertEqual(store.problems().last, "\(directory): mode 0711 had group/other bits, tightened to 0700")
        XCTAssertEqual(mode(directory), 0o700)
    }

    func testADirectoryAnotherUserOwnsIsRefused() throws {
        _ = try populated()
        try giveAway(directory)
        XCTAssertThrowsError(try DirectoryBondStore(directory: directory)) { error in
            XCTAssertTrue("\(error)".contains("owned by uid \(Self.stranger)"), "\(error)")
        }
    }
}
