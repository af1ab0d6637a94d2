import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One http or https GET for the echo server's `U` frames.
struct HTTPDownload: Sendable {
    let url: URL
    let limit: Int
    let timeout: TimeInterval

    func run() async throws(FetchError) -> [UInt8] {
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
            throw .network(url: url.absoluteString, reason: ResourceFetcher.reason(error))
        }
        if let http = response as? HTTPURLResponse, !(200...299).contains(http.statusCode) {
            throw .httpStatus(http.statusCode, url: url.absoluteString)
        }
        guard data.count <= limit else { throw .tooLarge(size: data.count, limit: limit) }
        return [UInt8](data)
    }
}
