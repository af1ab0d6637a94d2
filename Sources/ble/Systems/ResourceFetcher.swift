import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why the URL of a `U` frame could not be fetched. The echo server sends this text back in a
/// `T` frame instead of an image (SEEDS.md S1: "a `T` frame with an error message when the fetch
/// fails").
enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not a URL at all.
    case invalidURL(String)
    /// A scheme other than http, https or file.
    case unsupportedScheme(String)
    /// A file:// URL whose file cannot be read (missing, a directory, no permission).
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
        case let .file(path, reason): return "cannot read \(path): \(reason)"
        case let .httpStatus(status, url): return "cannot fetch \(url): HTTP status \(status)"
        case let .network(url, reason): return "cannot fetch \(url): \(reason)"
        case let .tooLarge(size, limit): return "the resource has \(size) bytes or more, over the limit of \(limit)"
        }
    }
}

/// Fetches what a `U` frame names, for the echo server (SEEDS.md S1: the peripheral "fetches that
/// URL itself"): http and https through Foundation's URLSession, file:// by reading the file.
///
/// A file is read synchronously on the calling task, so a world in virtual time sees no pause.
/// An http fetch waits on real sockets: in virtual time the world's clock may run on meanwhile,
/// so the virtual-radio tests use file:// URLs only.
struct ResourceFetcher: Sendable {
    /// The most bytes a resource may have (an `I` frame's body can say at most 9,999,999).
    var maximumSize: Int
    /// How long an http request may take, in real seconds.
    var timeout: TimeInterval = 10

    func fetch(_ text: String) async throws(FetchError) -> [UInt8] {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { throw .invalidURL(text) }
        switch scheme {
        case "file": return try readFile(url.path)
        case "http", "https": return try await download(url)
        default: throw .unsupportedScheme(scheme)
        }
    }

    /// Reads at most `maximumSize + 1` bytes, so an oversized file is refused without reading it all.
    private func readFile(_ path: String) throws(FetchError) -> [UInt8] {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw .file(path: path, reason: Self.reason(error))
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            throw .file(path: path, reason: Self.reason(error))
        }
        guard data.count <= maximumSize else { throw .tooLarge(size: data.count, limit: maximumSize) }
        return [UInt8](data)
    }

    private func download(_ url: URL) async throws(FetchError) -> [UInt8] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(from: url)
        } catch {
            throw .network(url: url.absoluteString, reason: Self.reason(error))
        }
        if let http = response as? HTTPURLResponse, !(200...299).contains(http.statusCode) {
            throw .httpStatus(http.statusCode, url: url.absoluteString)
        }
        guard data.count <= maximumSize else { throw .tooLarge(size: data.count, limit: maximumSize) }
        return [UInt8](data)
    }

    /// A short human reason: Foundation's description of a POSIX or URL error.
    private static func reason(_ error: any Error) -> String {
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
