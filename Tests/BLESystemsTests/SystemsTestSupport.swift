import BLESystems
import Foundation

/// Bytes that look like an image: deterministic, every byte value, not valid UTF-8.
func imageBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

/// An echo server that serves the files under `directory` (`ble serve echo --files DIR`).
func echoServer(serving directory: URL) throws -> EchoServeProfile {
    EchoServeProfile(files: try ServedDirectory(directory.path))
}
