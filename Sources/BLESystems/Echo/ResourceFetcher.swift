import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches what a `U` frame names, for the echo server (docs/SYSTEMS.md S1: the peripheral "fetches that
/// URL itself"): http and https through Foundation's URLSession (`HTTPDownload`), file:// from
/// the `--files` directory only (`ServedDirectory`), never more than `maximumSize` bytes of either.
///
/// Neither runs on Swift's cooperative pool while it waits: files are read on a Dispatch thread,
/// downloads wait on URLSession's. The echo server calls it inside the clock's
/// `whileOutsideWork`, so in virtual time the world's clock holds still meanwhile (a central's
/// reply timeout cannot run out during a read that takes no time on the radio).
public struct ResourceFetcher: Sendable {
    /// The most bytes a resource may have (an `I` frame's body can say at most 9,999,999).
    public var maximumSize: Int
    /// Where file:// URLs may point; nil refuses them all.
    public var files: ServedDirectory?
    /// How long an http request may take, in real seconds.
    public var timeout: TimeInterval = 10

    /// A fetcher for resources of at most `maximumSize` bytes, serving file:// from `files` only.
    public init(maximumSize: Int, files: ServedDirectory? = nil) {
        self.maximumSize = maximumSize
        self.files = files
    }

    /// The bytes `text` names, or why not (`FetchError`, sent back as text).
    public func fetch(_ text: String) async throws(FetchError) -> [UInt8] {
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
    public static func reason(_ error: any Error) -> String {
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
