import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One http or https GET for the echo server's `U` frames, holding at most `limit` bytes.
///
/// `URLSession.data(from:)` would load the whole response before its size could be checked, so a
/// central could make the server fill its memory with one URL. Here the body streams through a
/// delegate: a `Content-Length` over the limit ends the request at the headers, and a body that
/// grows past the limit (no length given, or a lying one) is cancelled as soon as it does.
struct HTTPDownload: Sendable {
    let url: URL
    let limit: Int
    /// For the request and for the whole download, in real seconds.
    let timeout: TimeInterval

    func run() async throws(FetchError) -> [UInt8] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        let receiver = HTTPBodyReceiver(url: url, limit: limit)
        // The session keeps its delegate until invalidated: done below once the task has ended.
        let session = URLSession(configuration: configuration, delegate: receiver, delegateQueue: nil)
        let task = session.dataTask(with: url)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                receiver.start(task, reportingTo: continuation)
            }
        } onCancel: {
            task.cancel()
        }
        session.finishTasksAndInvalidate()
        return try result.get()
    }
}

/// The delegate of one download: collects the body under the limit and reports the outcome once.
final class HTTPBodyReceiver: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var body: [UInt8] = []
        var failure: FetchError?
        var continuation: CheckedContinuation<Result<[UInt8], FetchError>, Never>?
    }

    private let url: URL
    private let limit: Int
    private let state = Mutex(State())

    init(url: URL, limit: Int) {
        self.url = url
        self.limit = limit
    }

    /// Starts `task`; `continuation` gets the body or the error when it completes.
    func start(_ task: URLSessionDataTask, reportingTo continuation: CheckedContinuation<Result<[UInt8], FetchError>, Never>) {
        state.withLock { $0.continuation = continuation }
        task.resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        var refusal: FetchError?
        if let http = response as? HTTPURLResponse, !(200...299).contains(http.statusCode) {
            refusal = .httpStatus(http.statusCode, url: url.absoluteString)
        } else if response.expectedContentLength > Int64(limit) {
            refusal = .tooLarge(size: Int(clamping: response.expectedContentLength), limit: limit)
        }
        guard let refusal else { return completionHandler(.allow) }
        state.withLock { $0.failure = $0.failure ?? refusal }
        completionHandler(.cancel)
        dataTask.cancel()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = state.withLock { s -> Bool in
            guard s.failure == nil else { return true }
            guard s.body.count + data.count <= limit else {
                s.failure = .tooLarge(size: s.body.count + data.count, limit: limit)
                s.body = []
                return true
            }
            s.body.append(contentsOf: data)
            return false
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock { s -> (CheckedContinuation<Result<[UInt8], FetchError>, Never>?, Result<[UInt8], FetchError>) in
            defer { s.continuation = nil }
            if let failure = s.failure { return (s.continuation, .failure(failure)) }
            if let error { return (s.continuation, .failure(.network(url: url.absoluteString, reason: ResourceFetcher.reason(error)))) }
            return (s.continuation, .success(s.body))
        }
        continuation?.resume(returning: result)
    }
}
