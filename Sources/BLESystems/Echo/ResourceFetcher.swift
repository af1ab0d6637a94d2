import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why the URL of a `U` frame could not be fetched. The echo server sends this text back in a
/// `T` frame instead of an image (SEEDS.md S1: "a `T` frame with an error message when the fetch
/// fails").
enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
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

    var description: String {
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

/// Fetches what a `U` frame names, for the echo server (SEEDS.md S1: the peripheral "fetches that
/// URL itself"): http and https through Foundation's URLSession (`HTTPDownload`), file:// from
/// the `--files` directory only (`ServedDirectory`), never more than `maximumSize` bytes of either.
///
/// Neither runs on Swift's cooperative pool while it waits: files are read on a Dispatch thread,
/// downloads wait on URLSession's. In virtual time the world's clock runs on meanwhile (a file
/// read takes a fraction of a connection interval; an http fetch waits on real sockets, so the
/// virtual-radio tests use file:// URLs).
struct ResourceFetcher: Sendable {
    /// The most bytes a resource may have (an `I` frame's body can say at most 9,999,999).
    var maximumSize: Int
    /// Where file:// URLs may point; nil refuses them all.
    var files: ServedDirectory?
    /// How long an http request may take, in real seconds.
    var timeout: TimeInterval = 10

    init(maximumSize: Int, files: ServedDirectory? = nil) {
        self.maximumSize = maximumSize
        self.files = files
    }

    func fetch(_ text: String) async throws(FetchError) -> [UInt8] {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { throw .invalidURL(text) }
        switch scheme {
        case "file":
            guard let files else { throw .filesNotServed }
            // file://HOST/path names a file on another machine (RFC 8089 §2); only ours is served.
            guard (url.host ?? "").isEmpty || url.host?.lowercased() == "localhost" else { throw .invalidURL(text) }
            return try await files.read(url.path, limit: maximumSize)
        case "http", "https":
            return try await HTTPDownload(url: url, limit: maximumSize, timeout: timeout).run()
        default:
            throw .unsupportedScheme(scheme)
        }
    }

    /// A short human reason: Foundation's description of a POSIX or URL error.
    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(ns.code)) {
            return String(cString: strerror(code.rawValue))
        }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return ns.localizedDescription
    }
}
