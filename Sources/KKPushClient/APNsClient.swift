import Foundation
public import KKPushCore
import Logging
import Synchronization

/// One notification of a batch and where it goes.
public struct PushBatchItem: Sendable {
    /// The notification.
    public var request: NotificationRequest
    /// The endpoint (Apple's sandbox or production host, or a stand-in).
    public var endpoint: APNsEndpoint
    /// The credential (a name of a ``ProviderCredentialSet``) to send with, for a ``ProviderClientRouter``; an
    /// ``APNsClient`` sends with its own credential and ignores it.
    public var credential: String?

    /// Creates a batch item.
    public init(request: NotificationRequest, endpoint: APNsEndpoint, credential: String? = nil) {
        self.request = request
        self.endpoint = endpoint
        self.credential = credential
    }
}

/// The APNs client: libcurl's multi interface on a thread of its own (or on
/// ``APNsClientConfiguration/loopThreads`` of them), HTTP/2 multiplexed over a few long-lived connections
/// per endpoint, with an async/await API on top.
///
/// Every notification ends in exactly one ``PushOutcome``. Requests APNs would reject (by the shared
/// ``APNsRequestRules``) never leave the machine unless pre-flight is off. Call ``shutdown()`` when
/// done, or use ``withAPNsClient(configuration:isolation:_:)``.
public final class APNsClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: APNsClientConfiguration
    /// One loop thread per ``APNsClientConfiguration/loopThreads``, each with its share of the connections.
    private let loops: [CurlLoop]
    /// The loop a single ``send(_:to:)`` goes to next.
    private let nextLoop = Atomic<Int>(0)
    private let authentication: AuthenticationKind

    /// Creates a client and starts its loop threads. Throws if libcurl lacks HTTP/2 or TLS, if the
    /// configuration is invalid, or if the credential cannot be used.
    public init(configuration: APNsClientConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
        var made: [CurlLoop] = []
        for (i, share) in configuration.connectionShares.enumerated() {
            var own = configuration
            own.maxConnections = share
            own.loopThreads = 1
            // The memory budget is the whole client's: each loop thread keeps its share of the streams.
            own.inFlightMemoryBudget = max(
                APNsClientConfiguration.bytesPerStream, configuration.inFlightMemoryBudget / configuration.loopThreads)
            do {
                made.append(
                    try CurlLoop(configuration: own, threadName: i == 0 ? "kkpush-curl" : "kkpush-curl-\(i + 1)"))
            } catch {
                // The loops already started stop on their own; nothing was submitted to them.
                for loop in made { Task { await loop.shutdown() } }
                throw error
            }
        }
        loops = made
        switch configuration.credential.storage {
        case .certificate(_, _, _): authentication = .certificate(topics: configuration.credential.certificateTopics)
        case .token, .none: authentication = .token
        }
    }

    /// Sends one notification to `endpoint` and returns its final outcome (after any retries).
    public func send(_ request: NotificationRequest, to endpoint: APNsEndpoint) async -> PushOutcome {
        var memo = PreflightMemo()
        return await withCheckedContinuation { (c: CheckedContinuation<PushOutcome, Never>) in
            let job = makeJob(request, endpoint: endpoint, index: 0, sink: ContinuationSink(c), memo: &memo)
            let turn = loops.count == 1 ? 0 : nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue
            loops[turn % loops.count].submit(job)
        }
    }

    /// Sends one notification to the configured endpoint of `environment`.
    public func send(_ request: NotificationRequest, environment: APNsEnvironment) async -> PushOutcome {
        await send(request, to: configuration.endpoint(for: environment))
    }

    /// What the client's connections carried so far, over every loop thread (see ``APNsClientUsage``).
    public var usage: APNsClientUsage {
        var total = APNsClientUsage()
        for loop in loops {
            let one = loop.usage
            total.peakStreamsPerConnection = max(total.peakStreamsPerConnection, one.peakStreams)
            total.connectionsOpened += one.opened
            total.peakOpenConnections += one.peakOpen
            total.streamCapPerConnection = loop.streamCap
            total.inFlightWindow += one.window
        }
        return total
    }

    /// Sends a batch from a synchronous sequence (at most ``APNsClientConfiguration/maxInFlightPerConnection`` ×
    /// ``APNsClientConfiguration/maxConnections`` in flight, or the memory budget's streams when the server's
    /// number is followed). The calling task iterates the sequence and runs the pre-flight rules, a little ahead of
    /// the loop thread (at most 1024 items waiting), so that the loop thread spends its time on the wire.
    /// `onResult` is called once per notification, on the loop thread: keep it short (with several loop threads
    /// it may be called on two of them at once). Returns when every outcome was delivered.
    ///
    /// Cancelling the calling task stops the batch as it stops
    /// ``sendAll(streaming:bufferSize:onResult:)``: no new push starts, the items already taken from the
    /// sequence but not started end as failed `.interrupted`, and pushes already started go on to their
    /// outcome.
    public func sendAll<S: Sequence & Sendable>(
        _ items: S, onResult: @escaping @Sendable (PushResult) -> Void
    ) async where S.Element == PushBatchItem {
        try? await feedBuffered(bufferSize: 1024, onResult: onResult) { feed, sink, memo in
            for (index, item) in items.enumerated() {
                await feed.push(makeJob(item.request, endpoint: item.endpoint, index: index, sink: sink, memo: &memo))
                if Task.isCancelled { break }
            }
        }
    }

    /// Sends a batch from an asynchronous sequence (a file being read, a database cursor): items are
    /// checked and queued as they come, with at most `bufferSize` waiting, and `onResult` is called once
    /// per notification on the loop thread (with several, on any of them, maybe at once). Returns when every
    /// outcome was delivered; rethrows an error
    /// of the sequence after the outcomes of the items before it.
    ///
    /// Cancelling the calling task stops the batch: the sequence is not read further, no new push
    /// starts, and the items waiting in the buffer end as failed `.interrupted` (never sent); pushes
    /// already started go on to their outcome (or end `.interrupted` on ``shutdown()``).
    public func sendAll<S: AsyncSequence & Sendable>(
        streaming items: S, bufferSize: Int = 1024, onResult: @escaping @Sendable (PushResult) -> Void
    ) async throws where S.Element == PushBatchItem {
        try await feedBuffered(bufferSize: bufferSize, onResult: onResult) { feed, sink, memo in
            var index = 0
            for try await item in items {
                await feed.push(makeJob(item.request, endpoint: item.endpoint, index: index, sink: sink, memo: &memo))
                index += 1
                if Task.isCancelled { break }
            }
        }
    }

    /// Runs one batch through bounded buffers, one per loop thread: `produce` makes the jobs on the calling
    /// task and pushes them, the loop threads take them as room frees up. Returns when every outcome was
    /// delivered; rethrows an error of `produce` after the outcomes of the jobs it pushed before it.
    private func feedBuffered(
        bufferSize: Int, onResult: @escaping @Sendable (PushResult) -> Void,
        produce: (inout BatchFeeds, any ResultSink, inout PreflightMemo) async throws -> Void
    ) async throws {
        let sink = CallbackSink(onResult)
        // One lock for "the feeds finished" and "the caller waits", so the loops' onFinished and the wait below
        // cannot miss each other (with two locks, a feed that finished while the caller was between them left
        // the caller waiting for ever: an input error after only skipped lines, an empty input).
        let completion = Mutex(BatchCompletion(unfinished: loops.count))
        var feed = BatchFeeds(
            loops.map { loop in
                BufferedJobFeed(
                    limit: bufferSize / loops.count, wake: { loop.wake() },
                    onFinished: { completion.withLock { $0.feedFinished() }?.resume() })
            })
        for (loop, one) in zip(loops, feed.feeds) { loop.add(feed: one) }
        var failure: (any Error)? = nil
        var memo = PreflightMemo()
        // The handler covers the wait too: a batch whose items all fit in the buffer is read at once, and a cancel
        // while they wait there must still stop them.
        await withTaskCancellationHandler {
            do {
                try await produce(&feed, sink, &memo)
            } catch {
                failure = error
            }
            feed.finish()
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let already = completion.withLock { state -> Bool in
                    if state.unfinished == 0 { return true }
                    state.waiter = c
                    return false
                }
                if already { c.resume() }
            }
        } onCancel: { [feed] in
            feed.stop()
        }
        if let failure { throw failure }
    }

    /// The outcomes of a batch as a stream, in the order they finish.
    public func results<S: AsyncSequence & Sendable>(of items: S, bufferSize: Int = 1024) -> AsyncStream<PushResult>
    where S.Element == PushBatchItem {
        AsyncStream { continuation in
            let task = Task {
                try? await self.sendAll(streaming: items, bufferSize: bufferSize) { continuation.yield($0) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Stops the loop threads and closes the connections; pushes not finished end as failed.
    public func shutdown() async {
        for loop in loops { await loop.shutdown() }
    }

    private func makeJob(
        _ request: NotificationRequest, endpoint: APNsEndpoint, index: Int, sink: any ResultSink,
        memo: inout PreflightMemo
    ) -> Job {
        let wire = WireRequest(endpoint: endpoint, request: request)
        var job = Job(request: wire, sink: sink, index: index)
        guard configuration.preflight else { return job }
        let check = memo.check(request, authentication: authentication)
        job.problems = check.problems
        if !check.isValid {
            let errors = check.errors.map { "\($0.code): \($0.message) Fix: \($0.fix)" }.joined(separator: "; ")
            job.immediate = .failed(
                PushFailure(kind: .preflight, message: "Not sent: APNs would reject this request. \(errors)"))
        }
        return job
    }
}

/// The last pre-flight verdict, reused when a batch repeats the same request to other tokens (a
/// benchmark, one payload to a token list): the rules look at a token only for its format, so a
/// verdict holds for any other well-formed lowercase token of the same length with identical headers
/// and payload.
struct PreflightMemo {
    private var last: NotificationRequest?
    private var verdict = RequestCheck()

    private var lastIsPlain = false

    mutating func check(_ request: NotificationRequest, authentication: AuthenticationKind) -> RequestCheck {
        if let last {
            if last.deviceToken == request.deviceToken {
                if last == request { return verdict }
            } else if lastIsPlain, last.deviceToken.utf8.count == request.deviceToken.utf8.count,
                Self.isPlainToken(request.deviceToken)
            {
                var blanked = request
                blanked.deviceToken = last.deviceToken
                if blanked == last { return verdict }
            }
        }
        verdict = APNsRequestRules.preflight(request, authentication: authentication)
        last = request
        lastIsPlain = Self.isPlainToken(request.deviceToken)
        return verdict
    }

    /// 64 to 400 lowercase hex digits, an even number: a token no rule says anything about.
    private static func isPlainToken(_ token: String) -> Bool {
        let count = token.utf8.count
        guard count >= DeviceToken.minimumHexLength, count <= DeviceToken.maximumHexLength, count % 2 == 0 else {
            return false
        }
        return token.utf8.allSatisfy(\.isLowercaseASCIIHexDigit)
    }
}

/// Runs `body` with a new client and shuts the client down afterwards, also when `body` throws.
///
/// `body` runs on the caller's actor (`isolation`), so a program's `main` or a `@MainActor` view model can pass a
/// closure that captures its own state.
public func withAPNsClient<T>(
    configuration: APNsClientConfiguration, isolation: isolated (any Actor)? = #isolation,
    _ body: (APNsClient) async throws -> T
) async throws -> T {
    let client = try APNsClient(configuration: configuration)
    do {
        let value = try await body(client)
        await client.shutdown()
        return value
    } catch {
        await client.shutdown()
        throw error
    }
}

/// Where a batch stands, for ``APNsClient/sendAll(streaming:bufferSize:onResult:)``'s wait.
private struct BatchCompletion {
    /// Feeds (one per loop thread) that have not finished yet.
    var unfinished: Int
    /// The caller, once it waits.
    var waiter: CheckedContinuation<Void, Never>?

    /// One feed finished: the caller to resume if it was the last and the caller already waits.
    mutating func feedFinished() -> CheckedContinuation<Void, Never>? {
        unfinished -= 1
        guard unfinished == 0 else { return nil }
        defer { waiter = nil }
        return waiter
    }
}

/// What a client's connections carried: how many streams the server let one connection carry (the most seen in
/// flight on one at once) and how many connections the work needed. A benchmark reports it; a provider reads it to
/// see what its settings gave.
public struct APNsClientUsage: Sendable, Hashable, Codable {
    /// The most pushes in flight on one connection at once (each counted from the moment libcurl sent it on that
    /// connection until its answer or failure).
    public var peakStreamsPerConnection = 0
    /// The connections opened, reconnects included.
    public var connectionsOpened = 0
    /// The most connections open at once (summed over the loop threads).
    public var peakOpenConnections = 0
    /// The cap on streams per connection the client set in libcurl: an explicit
    /// ``APNsClientConfiguration/maxInFlightPerConnection``, or the memory budget's streams (libcurl then uses the
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS` below it).
    public var streamCapPerConnection = 0
    /// The pushes the client lets be in flight now, over every loop thread: when it follows the server's streams
    /// and sizes them to the round trip (``APNsClientConfiguration/sizesInFlightToRoundTrip``), what the round
    /// trip and the rate it measured need; otherwise its whole capacity.
    public var inFlightWindow = 0

    /// Nothing carried yet.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case peakStreamsPerConnection = "peak_streams_per_connection"
        case connectionsOpened = "connections_opened"
        case peakOpenConnections = "peak_open_connections"
        case streamCapPerConnection = "stream_cap_per_connection"
        case inFlightWindow = "in_flight_window"
    }
}
