internal import CCurl
internal import CKKPushSystem
import Foundation
import KKPushCore
import Logging
import Synchronization

/// A source of jobs the loop pulls from when it has room (a batch).
protocol JobFeed: AnyObject, Sendable {
    /// The next job, `.wait` if none is ready yet (the feed wakes the loop when one is), or
    /// `.done` after the last. Called on the loop thread only.
    func next() -> FeedStep
    /// Jobs taken from this feed without a final outcome yet (loop thread only).
    var outstanding: Int { get set }
    /// Called once, on the loop thread, after the feed said `.done` and its last job finished.
    func finished()
}

/// What a feed has.
enum FeedStep {
    case job(Job)
    case wait
    case done
}

/// libcurl's multi interface on a thread of its own: takes jobs, runs them over multiplexed HTTP/2
/// connections, and hands every job's one final outcome to its sink. What an attempt's end means (retry,
/// new token, final outcome) and when retries are due, the loop asks its `PushScheduler`.
final class CurlLoop: @unchecked Sendable {
    private struct Inbox {
        var jobs: [Job] = []
        var feeds: [any JobFeed] = []
        var stopping = false
        var stopped = false
        /// A ``CurlLoop/wake()`` since the loop last read the inbox (see ``CurlLoop/run()``).
        var woken = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let inbox = Mutex(Inbox())
    private let multi: UnsafeMutableRawPointer
    private let configuration: APNsClientConfiguration
    private let settings: CurlTransfer.EasySettings
    /// The most pushes this loop keeps in libcurl at once: an explicit
    /// ``APNsClientConfiguration/maxInFlightPerConnection`` times the connections, or else the memory budget's streams.
    private let capacity: Int
    /// The cap on streams per connection kkpush sets in libcurl (`CURLMOPT_MAX_CONCURRENT_STREAMS`); libcurl uses the
    /// smaller of it and the server's `SETTINGS_MAX_CONCURRENT_STREAMS`.
    let streamCap: Int
    /// True when the per-connection streams are the server's (no explicit maxInFlightPerConnection).
    private let followsServer: Bool
    /// How many of ``capacity`` the round trip needs (``InFlightWindow``); nil: the capacity, always (an explicit
    /// maxInFlightPerConnection, or ``APNsClientConfiguration/sizesInFlightToRoundTrip`` off).
    private var window: InFlightWindow?
    /// ``InFlightWindow/current`` for ``usage`` (any thread).
    private let windowNow = Atomic<Int>(0)
    private var logger: Logger
    /// The connections as kkpush sees them; lives as long as the loop (libcurl's socket callbacks point at it).
    private let connections: ClientConnections

    // Loop thread only.
    private var idle: [CurlTransfer] = []
    private var transfers: [CurlTransfer] = []
    private var active = 0
    private var ready = JobQueue()
    /// Outcomes, retries and their timing.
    private var scheduler: PushScheduler
    private var feeds: [any JobFeed] = []
    private var headerCache: [HeaderKey: CurlHeaderList] = [:]
    private var lastHeaders: (key: HeaderKey, list: CurlHeaderList)?
    private var bearer: (value: String, generation: Int)?
    private var bearerError: String?
    private var urlPrefixes: [APNsEndpoint: [UInt8]] = [:]
    private var lastPrefix: (endpoint: APNsEndpoint, prefix: [UInt8])?
    private var thread: Thread?
    private let threadName: String

    /// Starts a loop thread named `threadName` (the kernel keeps 15 bytes of it) for `configuration`'s
    /// connections (its ``APNsClientConfiguration/maxConnections`` is this loop's share).
    init(configuration: APNsClientConfiguration, threadName: String = "kkpush-curl") throws {
        guard Libcurl.globalInit() else {
            throw KKPushError(code: .curlGlobalInit, message: "curl_global_init failed.")
        }
        try LibcurlInfo.current.requireAPNsSupport()
        try configuration.validate()
        guard let m = curl_multi_init() else {
            throw KKPushError(code: .curlInit, message: "curl_multi_init failed (out of memory?).")
        }
        multi = m
        self.threadName = threadName
        self.configuration = configuration
        logger = configuration.logger
        if let explicit = configuration.maxInFlightPerConnection {
            followsServer = false
            streamCap = explicit
            capacity = explicit * configuration.maxConnections
        } else {
            // The server's number, below the budget: libcurl applies min(server's SETTINGS, this cap) per
            // connection and opens another connection (up to maxConnections) only when every one is at it.
            followsServer = true
            capacity = configuration.budgetStreams
            streamCap = capacity
        }
        scheduler = PushScheduler(policy: configuration.retry, credential: configuration.credential)
        if followsServer && configuration.sizesInFlightToRoundTrip {
            window = InFlightWindow(capacity: capacity, now: monotonicNanos())
        }
        windowNow.store(capacity, ordering: .relaxed)
        var cert: [UInt8]? = nil
        var key: [UInt8]? = nil
        if case .certificate(let c, let k, _) = configuration.credential.storage {
            cert = c
            key = k
        }
        let requestTimeoutMS = Int(configuration.requestTimeout.milliseconds)
        connections = ClientConnections(
            coalesceWrites: configuration.coalesceWrites,
            userTimeoutMS: UInt32(clamping: min(requestTimeoutMS, 30_000)))
        settings = CurlTransfer.EasySettings(
            connectTimeoutMS: Int(configuration.connectTimeout.milliseconds),
            requestTimeoutMS: requestTimeoutMS,
            idleReuseSeconds: max(1, Int(configuration.idleReuseLimit.components.seconds)),
            proxyURL: configuration.proxyURL, certificatePEM: cert, privateKeyPEM: key,
            connections: connections)
        let options: [(CURLMoption, Int)] = [
            (CURLMOPT_PIPELINING, kk_curl_pipe_multiplex()),
            (CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnections),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, streamCap),
        ]
        for (option, value) in options {
            let rc = kk_curl_multi_setopt_long(multi, option, value)
            guard rc == CURLM_OK else {
                curl_multi_cleanup(multi)
                throw KKPushError(
                    code: .curlMultiSetopt,
                    message:
                        "libcurl refused multi option \(option.rawValue): \(String(cString: curl_multi_strerror(rc))).",
                    fix: "The client needs libcurl 7.67 or later.")
            }
        }
        // Fail early on a credential that cannot be used (a bad certificate, a token that cannot be signed).
        _ = try CurlTransfer(settings: settings)
        if case .token(let source) = configuration.credential.storage {
            bearer = try source.currentBearer()
        }
        let thread = Thread { [self] in self.run() }
        thread.name = threadName
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    deinit {
        // The loop thread cleans the multi handle up when it stops (see `stopAll`); a loop that was
        // never shut down keeps its thread (and its connections), and so is never deinitialised
        // before the process ends.
    }

    // MARK: - Any thread

    /// Queues one job.
    func submit(_ job: Job) {
        let accepted = inbox.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            wake()
        } else {
            var j = job
            j.immediate = .failed(PushFailure(kind: .interrupted, message: "Stopped before this push was sent."))
            j.sink.deliver(Self.immediateResult(j))
        }
    }

    /// Adds a batch feed.
    func add(feed: any JobFeed) {
        let accepted = inbox.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.feeds.append(feed)
            return true
        }
        if accepted { wake() } else { drain(feed, exhausted: true) }
    }

    /// Wakes the loop from `curl_multi_poll`.
    /// Safe from any thread at any time: after the loop stopped (and freed the multi handle) it does nothing.
    func wake() {
        inbox.withLock { state in
            state.woken = true
            if !state.stopped { _ = curl_multi_wakeup(multi) }
        }
    }

    /// Stops the loop: jobs not finished end as failed, then the thread exits.
    func shutdown() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { state -> Bool in
                if state.stopped { return true }
                state.stopping = true
                state.stopWaiters.append(c)
                return false
            }
            if done { c.resume() } else { wake() }
        }
    }

    // MARK: - Loop thread

    private func run() {
        // The kernel's name (top -H, perf, /proc), set here: Foundation's `Thread.name` reaches the kernel only if the
        // starting thread had recorded the new thread's id before it ran, which under load it sometimes had not (the
        // thread then kept its starter's name).
        _ = kk_name_current_thread(threadName)
        var stillRunning: Int32 = 0
        while true {
            let (jobs, newFeeds, stopping) = inbox.withLock { state -> ([Job], [any JobFeed], Bool) in
                let j = state.jobs
                let f = state.feeds
                state.woken = false
                if !j.isEmpty { state.jobs.removeAll(keepingCapacity: true) }
                if !f.isEmpty { state.feeds.removeAll() }
                return (j, f, state.stopping)
            }
            for job in jobs { ready.append(job) }
            feeds.append(contentsOf: newFeeds)
            if stopping { break }
            refreshBearer()
            promoteDueRetries()
            fill()
            if active > 0 { connections.cork() }
            var rc = curl_multi_perform(multi, &stillRunning)
            connections.flush()
            if rc != CURLM_OK { logger.error("curl_multi_perform: \(String(cString: curl_multi_strerror(rc)))") }
            drainMessages()
            connections.notePeakStreams()
            let limited = fill()
            if window != nil {
                // While the first push goes alone, room is 1, not the window: no sample of the window's rate.
                window?.turnEnded(now: monotonicNanos(), limited: limited && connections.firstRoundTripDone)
                windowNow.store(window?.current ?? capacity, ordering: .relaxed)
            }
            var timeout = scheduler.pollTimeoutMS()
            if !ready.isEmpty && active < room { timeout = 0 }
            // A wake-up that came after the inbox was read is not left to curl_multi_wakeup alone: libcurl 8.21.0
            // drops a wake-up that arrives during curl_multi_perform (fixed in 8.22), and the loop then slept a
            // whole poll timeout with work in its inbox (1 s at a client's start, in 8 of 44 bench runs).
            if inbox.withLock({ $0.woken }) { timeout = 0 }
            rc = curl_multi_poll(multi, nil, 0, timeout, nil)
            if rc != CURLM_OK { logger.error("curl_multi_poll: \(String(cString: curl_multi_strerror(rc)))") }
        }
        stopAll()
    }

    private func stopAll() {
        // In flight: the request may have reached APNs if its body was handed to libcurl.
        for transfer in transfers where transfer.job != nil {
            _ = curl_multi_remove_handle(multi, transfer.easy)
            if var job = transfer.job {
                let sent = transfer.bodyHandedOver
                if transfer.sends > 0 { job.lastConnection = transfer.connection }
                transfer.reset()
                if sent { job.possiblyDuplicated = true }
                let failure = PushOutcome.Result.failed(
                    PushFailure(
                        kind: .interrupted,
                        message: sent
                            ? "Stopped while waiting for the answer: the request was sent, APNs may have it."
                            : "Stopped before the request was sent."))
                job.immediate = failure
                finish(job, result: failure)
            }
        }
        let failure = PushOutcome.Result.failed(
            PushFailure(kind: .interrupted, message: "Stopped before this push was sent."))
        while var job = ready.popFirst() {
            job.immediate = failure
            finish(job, result: failure)
        }
        for var job in scheduler.takeAll() {
            job.immediate = failure
            finish(job, result: failure)
        }
        let waiting = inbox.withLock { state -> ([Job], [any JobFeed], [CheckedContinuation<Void, Never>]) in
            state.stopped = true
            defer {
                state.jobs.removeAll()
                state.feeds.removeAll()
                state.stopWaiters.removeAll()
            }
            return (state.jobs, state.feeds, state.stopWaiters)
        }
        for var job in waiting.0 {
            job.immediate = failure
            finish(job, result: failure)
        }
        let open = feeds + waiting.1
        feeds.removeAll()
        for feed in open { drain(feed, exhausted: false) }
        // Every easy handle is out of the multi handle by now; `stopped` keeps `wake()` off it. Cleaning
        // it up closes the connections (a stopped client keeps no sockets open).
        curl_multi_cleanup(multi)
        transfers.removeAll()
        idle.removeAll()
        headerCache.removeAll()
        lastHeaders = nil
        for c in waiting.2 { c.resume() }
    }

    private func refreshBearer() {
        guard case .token(let source) = configuration.credential.storage else { return }
        do {
            let fresh = try source.currentBearer()
            if fresh.generation != bearer?.generation {
                headerCache.removeAll(keepingCapacity: true)
                lastHeaders = nil
            }
            bearer = fresh
            bearerError = nil
        } catch {
            bearerError = "\(error)"
        }
    }

    private func promoteDueRetries() {
        for job in scheduler.takeDue() { ready.append(job) }
    }

    /// How many pushes may be in libcurl now. Following the server, one until the first attempt on a new
    /// connection ended, then the capacity. Why: libcurl 7.88 takes a new connection to allow 100 streams until it
    /// reads the server's SETTINGS frame, which arrives a round trip after the TLS handshake (`cf_h2_connect` reads
    /// only what is already there). APNs starts a token connection at one stream until the first valid provider
    /// token (the mock's `oneStreamUntilAuthenticated`); a stream over the server's limit is refused, and libcurl
    /// 7.88 re-sends it and closes the connection (`Curl_retry_request`: `connclose`), so a first burst of 100
    /// would cost new connections, the rapid connecting Apple asks providers to avoid; and with the server's
    /// 1000 the 101st push would open a second connection the first did not need. One push first costs one round
    /// trip when a client starts (or reconnects after every connection closed); then the server's number is known.
    private var room: Int {
        followsServer && !connections.firstRoundTripDone ? 1 : window?.current ?? capacity
    }

    /// What the connections carried so far: the most streams on one at once, connections opened, the most open
    /// at once (any thread).
    var usage: (peakStreams: Int, opened: Int, peakOpen: Int, window: Int) {
        (
            connections.peakStreams.load(ordering: .relaxed), connections.openedCount.load(ordering: .relaxed),
            connections.peakOpen.load(ordering: .relaxed), windowNow.load(ordering: .relaxed)
        )
    }

    /// Starts jobs while there is room: retries and single sends first, then the batches in turn. True when it
    /// stopped for want of room with work still waiting (a feed may still have some).
    @discardableResult
    private func fill() -> Bool {
        let room = self.room
        while active < room {
            if let job = ready.popFirst() {
                start(job)
                continue
            }
            guard !feeds.isEmpty else { return false }
            var progressed = false
            var i = 0
            while i < feeds.count, active < room {
                let feed = feeds[i]
                switch feed.next() {
                case .job(let job):
                    feed.outstanding += 1
                    start(job)
                    progressed = true
                    i += 1
                case .wait:
                    i += 1
                case .done:
                    feeds.remove(at: i)
                    if feed.outstanding == 0 { feed.finished() }
                }
            }
            if !progressed { return false }
        }
        return !ready.isEmpty || !feeds.isEmpty
    }

    /// Ends every job a feed still has with a shutdown failure (any thread, once the loop is gone).
    private func drain(_ feed: any JobFeed, exhausted: Bool) {
        let failure = PushOutcome.Result.failed(
            PushFailure(kind: .interrupted, message: "Stopped before this push was sent."))
        var steps = 0
        loop: while steps < 100_000_000 {
            steps += 1
            switch feed.next() {
            case .job(var job):
                job.immediate = failure
                job.sink.deliver(Self.immediateResult(job))
            case .wait, .done:
                break loop
            }
        }
        feed.finished()
    }

    private static func immediateResult(_ job: Job) -> PushResult {
        let outcome = PushOutcome(
            result: job.immediate ?? .failed(PushFailure(kind: .client, message: "No outcome.")),
            duration: .zero, attempts: job.attempts, possiblyDuplicated: job.possiblyDuplicated,
            endpoint: job.request.endpoint, problems: job.problems)
        return PushResult(index: job.index, deviceToken: job.request.deviceToken, outcome: outcome)
    }

    private func headerList(for wire: WireRequest) throws -> CurlHeaderList {
        let request = wire.request
        let generation = bearer?.generation ?? -1
        let perRequest = request.apnsID != nil || request.collapseID != nil
        let key = HeaderKey(
            topic: request.topic, pushType: request.pushType?.rawValue, priority: request.priority,
            expiration: request.expiration, generation: generation)
        if !perRequest {
            // A batch mostly repeats its headers: the last list is checked before the cache is hashed.
            if let last = lastHeaders, last.key == key { return last.list }
            if let cached = headerCache[key] {
                lastHeaders = (key, cached)
                return cached
            }
        }
        var lines: [String] = []
        lines.reserveCapacity(8)
        if let bearer { lines.append("authorization: bearer \(bearer.value)") }
        // The apns-* headers exactly as the notifications model (and so the mock's rules) has them.
        for field in request.headerFields { lines.append("\(field.name): \(field.value)") }
        // libcurl adds `content-type: application/x-www-form-urlencoded` for POST bodies; say what it
        // is instead. And `accept: */*`, which APNs ignores: left out (less to encode per request).
        lines.append("content-type: application/json")
        lines.append("Accept:")
        let list = try CurlHeaderList(lines: lines)
        if !perRequest {
            if headerCache.count >= 256 { headerCache.removeAll(keepingCapacity: true) }
            headerCache[key] = list
            lastHeaders = (key, list)
        }
        return list
    }

    private func urlPrefix(for endpoint: APNsEndpoint) -> [UInt8] {
        if let last = lastPrefix, last.endpoint == endpoint { return last.prefix }
        let prefix: [UInt8]
        if let p = urlPrefixes[endpoint] {
            prefix = p
        } else {
            prefix = Array((endpoint.baseURL + "/3/device/").utf8)
            urlPrefixes[endpoint] = prefix
        }
        lastPrefix = (endpoint, prefix)
        return prefix
    }

    private func start(_ incoming: consuming Job) {
        var job = incoming
        if job.immediate != nil {
            finish(job, result: job.immediate!)
            return
        }
        if job.startNanos == 0 { job.startNanos = scheduler.now() }
        if case .token = configuration.credential.storage, bearer == nil {
            let result = PushOutcome.Result.failed(
                PushFailure(
                    kind: .client, message: "No provider token: \(bearerError ?? "the token could not be made").")
            )
            finish(job, result: result)
            return
        }
        let transfer: CurlTransfer
        if let t = idle.popLast() {
            transfer = t
        } else {
            do {
                transfer = try CurlTransfer(settings: settings)
                transfers.append(transfer)
            } catch {
                finish(job, result: .failed(PushFailure(kind: .client, message: ErrorWords.describe(error))))
                return
            }
        }
        job.attempts += 1
        job.bearerValue = bearer?.value
        do {
            let headers = try headerList(for: job.request)
            try transfer.prepare(job, headers: headers, urlPrefix: urlPrefix(for: job.request.endpoint))
        } catch {
            transfer.reset()
            idle.append(transfer)
            finish(job, result: .failed(PushFailure(kind: .client, message: ErrorWords.describe(error))))
            return
        }
        let rc = curl_multi_add_handle(multi, transfer.easy)
        guard rc == CURLM_OK else {
            transfer.reset()
            idle.append(transfer)
            finish(
                job,
                result: .failed(
                    PushFailure(
                        kind: .client, message: "curl_multi_add_handle: \(String(cString: curl_multi_strerror(rc)))")))
            return
        }
        active += 1
    }

    private func drainMessages() {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = kk_curl_msg_result(msg)
            guard let transfer = CurlTransfer.owner(of: easy) else {
                _ = curl_multi_remove_handle(multi, easy)
                continue
            }
            let attempt = transfer.result(code: code)
            _ = curl_multi_remove_handle(multi, easy)
            active -= 1
            if attempt.status > 0, attempt.sentNanos > 0, window != nil {
                let now = monotonicNanos()
                window?.answered(latency: now &- attempt.sentNanos, now: now)
            }
            if attempt.sends > 0 { connections.attemptEnded(port: attempt.localPort) } else { connections.noteEnded() }
            let job = transfer.takeJob()
            idle.append(transfer)
            if let job { handle(job, attempt) }
        }
    }

    /// Ends every attempt still on the connection kkpush just shut down, now: libcurl 7.88 reads the end
    /// of a connection once, for one of its streams, and leaves the others to wait out their own timeouts;
    /// and a connection still carrying streams keeps its place against `CURLMOPT_MAX_HOST_CONNECTIONS`,
    /// so the retries could not open a new one either.
    private func abandon(port: Int) {
        for transfer in transfers where transfer.job != nil && transfer.sends > 0 && transfer.localPort == port {
            var attempt = transfer.result(code: CURLE_RECV_ERROR)
            attempt.detail = "the client closed the connection: it answered nothing for a whole request timeout"
            _ = curl_multi_remove_handle(multi, transfer.easy)
            active -= 1
            connections.attemptEnded(port: port)
            guard let job = transfer.takeJob() else { continue }
            idle.append(transfer)
            handle(job, attempt)
        }
    }

    // MARK: - Outcomes and retries

    /// Does what the scheduler makes of the attempt: the connection policy (a dead connection is shut
    /// down, a token refresh replaces the connection) and the side effects are the loop's.
    private func handle(_ incoming: consuming Job, _ attempt: AttemptResult) {
        var job = incoming
        if attempt.sends > 0 { job.lastConnection = attempt.connection }
        let verdict = scheduler.verdict(for: &job, after: attempt)
        if PushScheduler.mayShowDeadConnection(attempt),
            connections.timedOut(port: attempt.localPort, sentNanos: attempt.sentNanos)
        {
            // A connection that answered nothing since this request went out is dead: shut it down so
            // its other streams fail now instead of each waiting out its own timeout.
            logger.info(
                "no answer on a connection for a whole request timeout: closed it, retrying its pushes on a new one")
            abandon(port: attempt.localPort)
        }
        act(on: verdict, job: &job, attempt: attempt)
    }

    private func act(on verdict: PushVerdict, job: inout Job, attempt: AttemptResult) {
        switch verdict {
        case .finish(let result):
            finish(job, result: result)
        case .retry(let result, let retryAfter):
            if let delay = scheduler.scheduleRetry(&job, atLeast: retryAfter) {
                logger.debug("retry \(job.attempts + 1) of push \(job.index) in \(delay / 1_000_000) ms")
                return
            }
            finish(job, result: result)
        case .refreshToken(let otherwise):
            if case .token(let source) = configuration.credential.storage {
                do {
                    try source.refreshBearer(afterExpired: job.bearerValue ?? bearer?.value ?? "")
                    refreshBearer()
                    // The connection that carried the expired token is replaced once its streams end; the
                    // first push to learn of it opens the new connection (one, not one per push: APNs
                    // treats rapid connecting as abuse), the others follow it or the old one's last turns.
                    job.freshConnect = connections.retire(port: attempt.localPort)
                    logger.info("ExpiredProviderToken: new token, retrying")
                    ready.append(job)
                    return
                } catch {
                    logger.error("could not refresh the provider token: \(error)")
                }
            }
            act(on: otherwise, job: &job, attempt: attempt)
        }
    }

    private func finish(_ job: Job, result: PushOutcome.Result) {
        let elapsed = job.startNanos == 0 ? 0 : scheduler.now() - job.startNanos
        let outcome = PushOutcome(
            result: result, duration: .nanoseconds(Int64(elapsed)), attempts: job.attempts,
            possiblyDuplicated: job.possiblyDuplicated, endpoint: job.request.endpoint, problems: job.problems,
            connection: job.lastConnection)
        job.sink.deliver(PushResult(index: job.index, deviceToken: job.request.deviceToken, outcome: outcome))
        if let feed = job.feed {
            feed.outstanding -= 1
            if feed.outstanding == 0, !feeds.contains(where: { $0 === feed }) { feed.finished() }
        }
    }
}
