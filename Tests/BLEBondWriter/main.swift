// A bond writer for the crash test (Tests/BLEInteropTests/BondStoreCrashTests.swift): rewrites
// the bonds of three peers in DIR forever through DirectoryBondStore, each write carrying a
// growing counter, and prints "wrote N" after each. The test kills it with SIGKILL at random
// points and checks that every bond file is whole: old or new, never torn.
import BLE
#if canImport(Glibc)
import Glibc
#endif

guard CommandLine.arguments.count == 2 else {
    print("usage: ble-bond-writer DIR")
    exit(64)
}
let store = try DirectoryBondStore(directory: CommandLine.arguments[1])
_ = try store.localIdentity()
let peers = (1...3).map { DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_00 | UInt64($0)), type: .random) }
// Go on from the highest counter on disk, so counters only grow across kills.
var n: UInt32 = try store.bonds().map(\.localSignCounter).max() ?? 0
while true {
    n += 1
    let peer = peers[Int(n) % peers.count]
    let key = (0..<16).map { UInt8(truncatingIfNeeded: n &+ UInt32($0)) }
    var bond = Bond(peer: peer, peerLongTermKey: key, localLongTermKey: key, peerIdentityResolvingKey: key, peerSignatureKey: key,
                    localSignCounter: n, secureConnections: true, authenticated: n % 2 == 0, keySize: 16)
    // Enough CCCDs that a file spans more than one write(2) of a small buffer.
    for h in 0..<UInt16(n % 40) { bond.clientConfigurations[0x0010 + h] = 1 }
    try store.save(bond)
    let line = "wrote \(n)\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}
