@testable import BLE
import BLEWire
import Foundation
import XCTest

/// The bonds directory is held open by one descriptor (opened with O_NOFOLLOW) from the moment
/// the store opens: a symlink swapped in for it later, or one there from the start, is never
/// followed, so keys are neither written to nor read from a directory someone else chose.
final class BondDirectorySymlinkTests: XCTestCase {
    var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "bond-symlink-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    func bond(_ last: UInt64) -> Bond {
        Bond(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_00 | last), type: .public),
             peerLongTermKey: [UInt8](repeating: 0x11, count: 16), secureConnections: true, authenticated: true, keySize: 16)
    }

    func testADirectorySwappedForASymlinkAfterOpeningIsNotFollowed() throws {
        let bonds = root + "/bonds", moved = root + "/bonds-moved", elsewhere = root + "/elsewhere"
        let store = try DirectoryBondStore(directory: bonds)
        try store.save(bond(1))
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: bonds, toPath: moved)
        try FileManager.default.createSymbolicLink(atPath: bonds, withDestinationPath: elsewhere)

        try store.save(bond(2))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere), [], "nothing written through the symlink")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: moved).sorted(),
                       [DirectoryBondStore.fileName(for: bond(1).peer), DirectoryBondStore.fileName(for: bond(2).peer)].sorted())
        XCTAssertEqual(try store.bonds().map(\.peer), [bond(1).peer, bond(2).peer], "read from the directory opened")
        XCTAssertTrue(try store.remove(bond(1).peer))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: moved), [DirectoryBondStore.fileName(for: bond(2).peer)])
    }

    func testABondsDirectoryThatIsASymlinkIsRefused() throws {
        let real = root + "/real", link = root + "/link"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        XCTAssertThrowsError(try DirectoryBondStore(directory: link))
    }

    /// A bonds directory removed while the store holds it open (`rm -rf` of the directory) no
    /// longer exists for the next start: a bond or a passkey's retirement written there would be
    /// lost with the process, so it is refused with an error that says why, not kept in a
    /// directory no one can reach.
    func testWritesToARemovedDirectoryAreRefused() throws {
        let bonds = root + "/bonds"
        let store = try DirectoryBondStore(directory: bonds)
        try store.save(bond(1))
        try FileManager.default.removeItem(atPath: bonds)
        XCTAssertThrowsError(try store.save(bond(2))) { error in
            XCTAssertTrue("\(error)".contains("removed"), "\(error)")
        }
        XCTAssertThrowsError(try store.retirePasskey(123456))
        XCTAssertFalse(FileManager.default.fileExists(atPath: bonds))
    }
}
