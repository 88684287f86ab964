import KKPushCore
import NIOCore
import NIOHTTP2

/// The connection-level decisions of ``APNsConnectionHandler``, without the I/O: the phase (open, draining
/// after a GOAWAY, closed), the first-request, body and idle timeouts, the GOAWAY grace and linger, the
/// rapid-reset window, the concurrent-stream limit before and after the SETTINGS ack, the pending-body
/// budget of the connection window, read pausing, and the counting of GOAWAY faults.
///
/// A value: the handler tells it what happened (a frame, a reset, an answer written, a timer due, at a
/// time it passes in), it answers what to do, and ``deadline(_:)`` says when each of its timers is due;
/// the handler schedules those on its event loop and writes the frames. Tests drive it in virtual time
/// (deadlines they make up), as `PushScheduler` is for the client. Request judging, headers and bodies
/// stay with the handler.
struct ConnectionStateMachine {
    /// The limits and timings it decides by: the timeouts, the grace period and the reset limit.
    typealias Limits = APNsConnectionHandler.Settings

    enum Phase: Equatable {
        /// Serving.
        case open
        /// A GOAWAY went out: serve streams up to `lastStream`, then close.
        case draining(lastStream: HTTP2StreamID)
        /// Closed, closing, or stalled: nothing more is read or answered.
        case closed
    }

    /// The connection's timers, in the order they are scheduled (the idle check before the first-request
    /// timeout, as they always were).
    enum Timer: Int, CaseIterable, Sendable {
        /// Nothing read or written for the idle timeout: GOAWAY `IdleTimeout` (checked once per timeout, never
        /// rescheduled per frame).
        case idle
        /// No request HEADERS within the first-request timeout: close.
        case firstRequest
        /// The earliest body due: refuse the streams whose body is overdue.
        case body
        /// After a GOAWAY: the grace period (pending streams), then the linger (all answered).
        case drain
    }

    /// What a timer that came due asks for.
    enum TimerAction: Equatable {
        case none
        /// No request arrived in time: close the connection (the machine is closed).
        case closeWithoutRequest
        /// Idle for the idle timeout: GOAWAY `IdleTimeout`.
        case idleTimeout
        /// These streams' bodies are overdue (no longer pending): RST_STREAM `REFUSED_STREAM`, never judged.
        case refuseOverdue([HTTP2StreamID])
        /// The grace after the GOAWAY ended with `unanswered` streams still pending: RST_STREAM `REFUSED_STREAM` on
        /// `refused` (requests up to the last-stream-id still incomplete, never judged: the client may send them
        /// again), then `then`: linger (the client may still be writing those requests' bodies; a close would meet
        /// them with a TCP reset that can throw away what it has not read yet) or close. Answers a delay still
        /// holds are dropped.
        case graceOver(unanswered: Int, refused: [HTTP2StreamID], then: DrainStep)
        /// The linger after the last answer ended: close (the machine is closed).
        case lingerOver
    }

    /// What comes once a draining connection has answered everything up to its GOAWAY's last stream.
    enum DrainStep: Equatable {
        /// Flush, keep reading (and ignoring) until the ``Timer/drain`` deadline.
        case linger
        /// Close now (the machine is closed).
        case close
    }

    /// A GOAWAY the connection sends.
    struct GoAway: Equatable {
        /// The highest stream judged.
        var lastStream: HTTP2StreamID
        /// Incomplete requests above it: dropped, never judged.
        var dropped: [HTTP2StreamID]
        /// Streams still to answer (requests incomplete or answers delayed).
        var pending: Int
        /// What follows at once; nil while streams are pending (closed when drained, or at the grace's end).
        var then: DrainStep?
    }

    /// A new stream's HEADERS, against the concurrent-stream limit.
    enum StreamOpening: Equatable {
        /// Not above the highest stream the client opened: not a new stream.
        case notNew
        /// Over the limit: RST_STREAM `REFUSED_STREAM` on it only, unprocessed (RFC 9113 §5.1.2).
        case refuse(open: Int)
        /// Open; `counted` if it was not counted open already.
        case open(counted: Bool)
    }

    /// A RST_STREAM from the client.
    enum PeerReset: Equatable {
        /// The stream is not pending (answered, closed or never seen): ignored (RFC 9113 §5.4.2).
        case ignored
        /// A pending stream (its request `incomplete`, or else its answer delayed), forgotten.
        case pending(incomplete: Bool)
        /// As `.pending`, and `resets` within the reset window is over the limit: GOAWAY `ENHANCE_YOUR_CALM`.
        case tooMany(incomplete: Bool, resets: Int)
    }

    /// What a graceful close request (shutdown, restart) asks for.
    enum GracefulClose: Equatable {
        /// Open: GOAWAY `Shutdown`.
        case goAway
        /// Already closed or stalled: just close the channel.
        case closeChannel
        /// Drained and lingering: close now (the machine is closed).
        case finish
        /// Still draining: the GOAWAY went out; the grace period runs.
        case none
    }

    /// An error the frame layer (or the channel) reported.
    enum ErrorHandling: Equatable {
        /// A stream error: that stream was reset, the connection goes on.
        case streamError
        /// A frame above the GOAWAY's last stream (RFC 9113 §6.8): ignored.
        case ignoredAfterGoAway
        /// Anything else: close (the machine is closed).
        case close
    }

    /// The mock allows this many streams until the client acknowledges the first SETTINGS, as NIOHTTP2 did (a
    /// client may open streams before it has read the limit).
    static let streamsBeforeSettingsAck = 100
    /// The connection window the mock keeps open for the client (the initial 65,535).
    static let connectionWindow = 65535
    /// The most body bytes of incomplete requests a connection may hold before its window stops
    /// being credited (a client sends each ≤ 5 KiB body whole, so only abuse comes near it).
    static let pendingBodyBudget = 1 << 20
    /// After a GOAWAY with only delayed answers to send, the wait beyond the longest of them.
    static let drainSlack: TimeAmount = .milliseconds(250)

    let limits: Limits
    private(set) var phase: Phase = .open
    /// The highest stream whose request was judged (the last-stream-id of any GOAWAY).
    private(set) var highestJudged: HTTP2StreamID = .rootStream
    /// The highest stream the client opened.
    private(set) var highestSeen: HTTP2StreamID = .rootStream
    /// Streams open as the frame layer counts them: from their HEADERS until it reports them closed.
    private(set) var openStreams: Set<HTTP2StreamID> = []
    /// Whether the client acknowledged the first SETTINGS (before that, 100 streams are allowed).
    private(set) var settingsAcknowledged = false
    private(set) var sawRequest = false
    /// Streams whose request is not complete: when their body must have ended, and the body bytes held.
    private var pending: [HTTP2StreamID: (due: NIODeadline, bytes: Int)] = [:]
    /// Body bytes held by incomplete requests.
    private(set) var pendingBodyBytes = 0
    /// Streams judged whose answer a delay holds, and when it is due.
    private var delayed: [HTTP2StreamID: NIODeadline] = [:]
    /// When recent resets of pending streams arrived (at most `resetLimit + 1` kept).
    private var resetTimes: [NIODeadline] = []
    private var goAwayCounts: [String: Int] = [:]
    /// The GOAWAYs this connection sent (one): more on the wire means the frame layer wrote its own.
    private(set) var ownGoAways = 0
    /// The connection window the client has left, as the frame layer last reported it (or as credited since).
    private var inboundWindow = connectionWindow
    /// Reading stopped because the channel cannot write (backpressure).
    private(set) var readingPaused = false
    /// When the connection last read a frame or wrote an answer (the idle timeout counts from it).
    private var lastIO: NIODeadline = .distantPast
    /// When the connection last received a whole request or wrote an answer (nil before its first request).
    private var lastActivity: NIODeadline?
    /// After a GOAWAY: how long to keep reading once everything up to its last-stream-id is answered (the
    /// client may still be writing requests it sent before the GOAWAY reached it: RFC 9113 §6.8), and whether
    /// that wait has begun.
    private var lingerAfterGoAway: TimeAmount = .zero
    private(set) var lingering = false
    private var firstRequestDue: NIODeadline?
    private var idleCheck: NIODeadline?
    private var bodyCheck: NIODeadline?
    private var drainDue: NIODeadline?

    init(limits: Limits) {
        self.limits = limits
    }

    /// Whether ``start(at:)`` ran: the timers run from then on.
    private var started = false

    /// The connection is up at `now` (its TLS handshake completed): the first-request and idle timeouts start.
    /// Later calls change nothing and return false. Before it, the handshake has its own timeout
    /// (`HandshakeTimeoutHandler`), so a handshake slowed by a loaded machine is not counted as idleness.
    @discardableResult
    mutating func start(at now: NIODeadline) -> Bool {
        guard !started else { return false }
        started = true
        lastIO = now
        idleCheck = now + limits.idleTimeout
        firstRequestDue = now + limits.firstRequestTimeout
        return true
    }

    /// When `timer` is due, or nil if it is not running (none runs once closed).
    func deadline(_ timer: Timer) -> NIODeadline? {
        if case .closed = phase { return nil }
        switch timer {
        case .idle: return idleCheck
        case .firstRequest: return firstRequestDue
        case .body: return bodyCheck
        case .drain: return drainDue
        }
    }

    /// What the connection knows of `id` (for the debug log of inbound RST_STREAM frames).
    func describe(_ id: HTTP2StreamID) -> String {
        if pending[id] != nil { return "pending (request incomplete)" }
        if delayed[id] != nil { return "pending (answer delayed)" }
        if id > highestSeen { return "never seen" }
        return "finished (answered or closed)"
    }

    func isPending(_ id: HTTP2StreamID) -> Bool { pending[id] != nil }

    /// Whether the request on `id` may still be judged and answered: not once closed, nor above the last
    /// stream of a GOAWAY (never judged: the client may retry it).
    func mayServe(_ id: HTTP2StreamID) -> Bool {
        switch phase {
        case .open: true
        case .draining(let last): id <= last
        case .closed: false
        }
    }

    // MARK: Frames and streams

    /// A frame on `stream` was read at `now` (it counts against idleness): whether to act on it.
    mutating func frameReceived(on stream: HTTP2StreamID, at now: NIODeadline) -> Bool {
        lastIO = now
        return mayServe(stream)
    }

    /// HEADERS on a stream that is not pending: a new stream if above every stream seen, checked against the
    /// concurrent-stream limit (`advertised` once the client acknowledged the SETTINGS that told it).
    mutating func streamOpened(_ id: HTTP2StreamID, advertisedLimit advertised: Int) -> StreamOpening {
        guard id > highestSeen else { return .notNew }
        highestSeen = id
        if !sawRequest {
            sawRequest = true
            firstRequestDue = nil
        }
        // Until the client acknowledges the first SETTINGS it may not have seen the limit yet (nghttp opens its
        // streams before), so the allowance before acknowledgement applies then.
        let limit = settingsAcknowledged ? advertised : Self.streamsBeforeSettingsAck
        if openStreams.count >= limit { return .refuse(open: openStreams.count) }
        return .open(counted: openStreams.insert(id).inserted)
    }

    mutating func settingsAcked() {
        settingsAcknowledged = true
    }

    /// A new stream's request began at `now`; pending until it ends, its body due within the body timeout.
    /// `awaitingBody`: its HEADERS did not end the stream (the body check is armed).
    mutating func requestStarted(_ id: HTTP2StreamID, at now: NIODeadline, awaitingBody: Bool) {
        pending[id] = (now + limits.bodyTimeout, 0)
        if awaitingBody { armBodyCheck() }
    }

    /// Body bytes arrived for `id` (counted against the pending-body budget while it is pending).
    mutating func bodyReceived(_ id: HTTP2StreamID, bytes: Int) {
        guard pending[id] != nil else { return }
        pending[id]?.bytes += bytes
        pendingBodyBytes += bytes
    }

    /// The request on `id` ended or was dropped: no longer pending (its bytes leave the budget). False if it
    /// was not pending.
    @discardableResult
    mutating func requestEnded(_ id: HTTP2StreamID) -> Bool {
        guard let ended = pending.removeValue(forKey: id) else { return false }
        pendingBodyBytes -= ended.bytes
        return true
    }

    /// The frame layer reports `id` closed: whether it was counted open, and whether its request was still pending.
    mutating func streamClosed(_ id: HTTP2StreamID) -> (wasOpen: Bool, wasPending: Bool) {
        (openStreams.remove(id) != nil, requestEnded(id))
    }

    /// Forgets the open streams (the connection is over): how many there were.
    mutating func forgetOpenStreams() -> Int {
        defer { openStreams.removeAll() }
        return openStreams.count
    }

    // MARK: Requests and answers

    /// A whole request arrived at `now`: how long the connection sat idle before it (since the last request
    /// or answer; nil for its first), for the black-hole fault.
    mutating func requestReceived(at now: NIODeadline) -> TimeAmount? {
        defer { lastActivity = now }
        return lastActivity.map { now - $0 }
    }

    /// The request on `id` was judged (the last-stream-id of a later GOAWAY covers it).
    mutating func judged(_ id: HTTP2StreamID) {
        if id > highestJudged { highestJudged = id }
    }

    /// An answer was written at `now`.
    mutating func answerWritten(at now: NIODeadline) {
        lastActivity = now
        lastIO = now
    }

    /// The answer to `id` is held until `due`.
    mutating func answerDelayed(_ id: HTTP2StreamID, until due: NIODeadline) {
        delayed[id] = due
    }

    /// A delayed answer came due: false if the client reset its stream meanwhile (or the connection closed).
    mutating func delayedAnswerDue(_ id: HTTP2StreamID) -> Bool {
        delayed.removeValue(forKey: id) != nil
    }

    /// GOAWAY faults with `after_streams` 0 refuse the stream they match, while the connection is open: the
    /// first such fault's id and reason.
    func refusingGoAway(in faults: [MockFault]) -> (id: String, reason: APNsReason)? {
        guard case .open = phase else { return nil }
        for fault in faults {
            if case .goAway(let after, let reason) = fault.kind, after == 0 { return (fault.id, reason) }
        }
        return nil
    }

    /// A stream matching `faults` was answered: counts it against their GOAWAYs (while open); the first fault
    /// whose count is reached fires.
    mutating func countAnswer(matching faults: [MockFault]) -> (id: String, reason: APNsReason)? {
        guard case .open = phase else { return nil }
        for fault in faults {
            guard case .goAway(let after, let reason) = fault.kind, after > 0 else { continue }
            let n = goAwayCounts[fault.id, default: 0] + 1
            goAwayCounts[fault.id] = n
            if n >= after { return (fault.id, reason) }
        }
        return nil
    }

    // MARK: Resets

    /// The client reset `id` at `now`. Only resets of pending streams count, and only while open: more than
    /// ``APNsConnectionHandler/Settings/resetLimit`` of them within the reset window is too many. A reset
    /// exactly the window ago has left it (`>`, not `>=`: the window is open at its start).
    mutating func streamReset(_ id: HTTP2StreamID, at now: NIODeadline) -> PeerReset {
        let incomplete: Bool
        if requestEnded(id) {
            incomplete = true
        } else if delayed.removeValue(forKey: id) != nil {
            incomplete = false
        } else {
            return .ignored
        }
        guard case .open = phase else { return .pending(incomplete: incomplete) }
        resetTimes.append(now)
        let windowStart = now - limits.resetWindow
        if let firstInWindow = resetTimes.firstIndex(where: { $0 > windowStart }), firstInWindow > 0 {
            resetTimes.removeFirst(firstInWindow)
        }
        if resetTimes.count > limits.resetLimit { return .tooMany(incomplete: incomplete, resets: resetTimes.count) }
        return .pending(incomplete: incomplete)
    }

    // MARK: Flow control and backpressure

    /// The frame layer reports the connection window the client has left.
    mutating func windowUpdated(to window: Int) {
        inboundWindow = window
    }

    /// The connection WINDOW_UPDATE to send now, if any: once half the window is used, unless the bodies of
    /// incomplete requests hold the pending-body budget (flow control then holds the client back).
    mutating func connectionCredit(channelActive: Bool) -> Int? {
        guard inboundWindow <= Self.connectionWindow / 2, pendingBodyBytes < Self.pendingBodyBudget, channelActive
        else { return nil }
        if case .closed = phase { return nil }
        let increment = Self.connectionWindow - inboundWindow
        inboundWindow = Self.connectionWindow
        return increment
    }

    /// The channel's writability changed: pause reading while it cannot write; resume when it can, unless
    /// closed (a stalled connection stays unread). Nil: no change.
    mutating func writabilityChanged(isWritable: Bool) -> Bool? {
        if !isWritable {
            guard !readingPaused else { return nil }
            readingPaused = true
            return false
        }
        guard readingPaused else { return nil }
        readingPaused = false
        if case .closed = phase { return nil }
        return true
    }

    // MARK: Timers

    /// `timer` came due at `now`.
    ///
    /// A timer that fires before the machine's current deadline for it (or after the machine dropped it) is stale
    /// and does nothing: an event loop that falls behind runs every overdue task of one tick together, so a task
    /// cancelled while another of the same tick ran (the drain timer, moved when a delayed answer started the
    /// linger) may still run. Without this check such a stale drain timer cut the linger short.
    mutating func timerFired(_ timer: Timer, at now: NIODeadline) -> TimerAction {
        guard let due = deadline(timer), now >= due else { return .none }
        switch timer {
        case .firstRequest:
            firstRequestDue = nil
            guard !sawRequest else { return .none }
            stop()
            return .closeWithoutRequest
        case .idle:
            idleCheck = nil
            guard case .open = phase else { return .none }
            let due = lastIO + limits.idleTimeout
            if now < due {
                idleCheck = due
                return .none
            }
            return .idleTimeout
        case .body:
            bodyCheck = nil
            if case .closed = phase { return .none }
            let overdue = pending.filter { $0.value.due <= now }.keys.sorted()
            for id in overdue { requestEnded(id) }
            armBodyCheck()
            return .refuseOverdue(overdue)
        case .drain:
            drainDue = nil
            guard case .draining = phase else { return .none }
            if lingering {
                close()
                return .lingerOver
            }
            let unanswered = pending.count + delayed.count
            let refused = pending.keys.sorted()
            pending.removeAll()
            pendingBodyBytes = 0
            delayed.removeAll()
            bodyCheck = nil
            return .graceOver(unanswered: unanswered, refused: refused, then: lingerThenClose(at: now) ?? .close)
        }
    }

    /// Arms the body check for the earliest pending stream, unless one is armed.
    private mutating func armBodyCheck() {
        guard bodyCheck == nil, let due = pending.values.lazy.map(\.due).min() else { return }
        bodyCheck = due
    }

    // MARK: Ending

    /// A GOAWAY at `now`, if open: names the highest stream judged, drops incomplete requests above it, and
    /// serves the rest, for at most the grace period. Requests up to the last-stream-id still incomplete get the
    /// whole grace period to arrive (RFC 9113 §6.8: the sender should let them complete; a client's bodies may be
    /// held back by flow control behind a hundred others), and those still incomplete at its end are refused
    /// (``TimerAction/graceOver(unanswered:refused:)``), never dropped silently. With only delayed answers to wait
    /// for, the wait is the longest of them plus ``drainSlack``. Once all is answered it lingers (`linger`: the
    /// server is not stopping) or closes.
    mutating func goAway(at now: NIODeadline, linger: Bool) -> GoAway? {
        guard case .open = phase else { return nil }
        let last = highestJudged
        phase = .draining(lastStream: last)
        let dropped = pending.keys.filter { $0 > last }.sorted()
        for id in dropped { requestEnded(id) }
        ownGoAways += 1
        lingerAfterGoAway = linger ? min(limits.goAwayLinger, limits.gracePeriod) : .zero
        var goAway = GoAway(lastStream: last, dropped: dropped, pending: pending.count + delayed.count)
        if pending.isEmpty && delayed.isEmpty {
            goAway.then = lingerThenClose(at: now)
        } else {
            let longest = delayed.values.map { $0 - now }.max() ?? .zero
            let wait = pending.isEmpty ? max(longest, .zero) + Self.drainSlack : limits.gracePeriod
            drainDue = now + min(wait, limits.gracePeriod)
        }
        return goAway
    }

    /// While draining, once nothing up to the last stream is pending: linger or close (nil: not yet, or
    /// already lingering).
    mutating func closeIfDrained(at now: NIODeadline) -> DrainStep? {
        guard case .draining = phase, pending.isEmpty, delayed.isEmpty else { return nil }
        return lingerThenClose(at: now)
    }

    private mutating func lingerThenClose(at now: NIODeadline) -> DrainStep? {
        guard !lingering else { return nil }
        lingering = true
        drainDue = nil
        guard lingerAfterGoAway > .zero else {
            close()
            return .close
        }
        drainDue = now + lingerAfterGoAway
        return .linger
    }

    /// The server asks the connection to end gracefully.
    mutating func gracefulCloseRequested() -> GracefulClose {
        switch phase {
        case .open: return .goAway
        case .closed: return .closeChannel
        case .draining:
            guard lingering else { return .none }
            close()
            return .finish
        }
    }

    /// An error was reported (`isHTTP2Error`: a protocol error the connection survives; `goAwaysOnWire`: the GOAWAYs
    /// written so far).
    mutating func errorCaught(isHTTP2Error: Bool, goAwaysOnWire: Int) -> ErrorHandling {
        if case .open = phase, goAwaysOnWire == 0, isHTTP2Error { return .streamError }
        // After our GOAWAY, NIOHTTP2 reports frames on streams above its last-stream-id as errors; only a GOAWAY
        // it wrote itself (a connection error) ends the connection at once.
        if case .draining = phase, isHTTP2Error, goAwaysOnWire <= ownGoAways { return .ignoredAfterGoAway }
        stop()
        return .close
    }

    /// Nothing more is read or answered (a close, reset, stall or black-hole fault; an error; the first-request
    /// timeout): no timer runs and delayed answers are dropped.
    mutating func stop() {
        phase = .closed
        delayed.removeAll()
        firstRequestDue = nil
        idleCheck = nil
        bodyCheck = nil
        drainDue = nil
    }

    /// Closed for good: pending requests are dropped too.
    mutating func close() {
        stop()
        pending.removeAll()
        pendingBodyBytes = 0
    }
}
