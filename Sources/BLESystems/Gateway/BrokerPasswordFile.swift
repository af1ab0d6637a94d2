import Foundation

/// A broker password from a file (`--password-file`), never from the command line: the file's
/// first line, without a leading UTF-8 byte-order mark or the line end (`\n` or `\r\n`); spaces
/// are kept, they may be part of the password.
public enum BrokerPasswordFile {
    /// Why no password came from the file.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The password in `path`. `warn` hears it when the file it names (symbolic links followed,
    /// as with secrets mounted by Docker or Kubernetes) may be read by other users.
    public static func read(_ path: String, warn: (String) -> Void) throws(Failure) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(description: "cannot read '\(path)'")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw Failure(description: "'\(path)' is not UTF-8 text") }
        let password = firstLine(of: text)
        guard !password.isEmpty else { throw Failure(description: "'\(path)' holds no password on its first line") }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            warn("\(path) can be read by other users (mode \(String(status.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        return password
    }

    /// The first line of `text` without a leading byte-order mark and its line end, taken by
    /// Unicode scalars (as Characters, `"\r\n"` is one, which a split at `"\n"` does not see).
    static func firstLine(of text: String) -> String {
        var scalars = Substring(text).unicodeScalars
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var line = scalars.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(Array.init) ?? []
        if line.last == "\r" { line.removeLast() }
        return String(String.UnicodeScalarView(line))
    }
}
