#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Small file helpers over the C library (the tool needs nothing more, and no Foundation).

func printError(_ text: String) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
        if n > 0 { out += buffer[0..<n] }
        if n < buffer.count { break }
    }
    return ferror(f) == 0 ? out : nil
}

func writeFile(_ path: String, _ bytes: [UInt8]) -> Bool {
    guard let f = fopen(path, "wb") else { return false }
    let n = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
    return fclose(f) == 0 && n == bytes.count
}

/// The regular files of a directory (sorted), or the path itself if it is not a directory.
func listFiles(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [path] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        names.append(path + "/" + name)
    }
    return names.sorted()
}
