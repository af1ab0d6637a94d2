/// Why the URL of a `U` frame could not be fetched. The echo server sends this text back in a
/// `T` frame instead of an image (docs/SYSTEMS.md S1: "a `T` frame with an error message when the fetch
/// fails").
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not a URL at all (or a file:// URL naming another host).
    case invalidURL(String)
    /// A scheme other than http, https or file.
    case unsupportedScheme(String)
    /// A file:// URL, and the server was started without `--files DIR`.
    case filesNotServed
    /// A file:// URL whose path is not under the `--files` directory (as written, or once its
    /// symlinks are resolved).
    case outsideServedDirectory(path: String, directory: String)
    /// A file:// URL naming something other than a regular file (a directory, a FIFO, a device).
    case notRegularFile(path: String)
    /// A file:// URL whose file cannot be read (missing, no permission).
    case file(path: String, reason: String)
    /// The server answered with a status outside 200...299.
    case httpStatus(Int, url: String)
    /// The request failed before a status came back (no such host, refused, timed out).
    case network(url: String, reason: String)
    /// The resource is larger than the reply may carry.
    case tooLarge(size: Int, limit: Int)

    /// The text the central receives in a `T` frame.
    public var description: String {
        switch self {
        case let .invalidURL(text): return "cannot fetch \"\(text)\": not a URL"
        case let .unsupportedScheme(scheme): return "cannot fetch a \(scheme): URL (only http, https and file)"
        case .filesNotServed: return "file:// URLs are not served; start the server with --files DIR"
        case let .outsideServedDirectory(path, directory): return "cannot serve \(path): it is outside \(directory)"
        case let .notRegularFile(path): return "cannot serve \(path): not a regular file"
        case let .file(path, reason): return "cannot read \(path): \(reason)"
        case let .httpStatus(status, url): return "cannot fetch \(url): HTTP status \(status)"
        case let .network(url, reason): return "cannot fetch \(url): \(reason)"
        case let .tooLarge(size, limit): return "the resource has \(size) bytes or more, over the limit of \(limit)"
        }
    }
}
