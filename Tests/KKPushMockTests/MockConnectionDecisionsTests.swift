import KKPushCore
import NIOCore
import NIOHTTP2
import Testing

@testable import KKPushMock

/// The mock's connection decisions, tested on the state machine alone: deadlines made up by the test, timers
/// fired at their deadlines as an event loop would, no channel, no sleep.
@Suite("ConnectionStateMachine in virtual time")
struct MockConnectionDecisionsTests {
    typealias Machine = ConnectionStateMachine

    static let limits = Machine.Limits(
        maxConcurrentStreams: 1000, raiseStreamsAfterAuth: false, goAwayOnBadCertificateEnvironment: false,
        gracePeriod: .seconds(5), resetLimit: 3, resetWindow: .seconds(30), firstRequestTimeout: .seconds(10),
        bodyTimeout: .seconds(3), idleTimeout: .seconds(60))

    /// An hour after the clock's zero, so that "now minus a window" stays a time.
    static let t0 = NIODeadline.uptimeNanoseconds(3_600_000_000_000)

    static func started(_ limits: Machine.Limits = limits) -> Machine {
        var machine = Machine(limits: limits)
        machine.start(at: t0)
        return machine
    }

    /// Fires every timer due by `time`, earliest first, each at its deadline (as an event loop does); the
    /// actions other than `.none`.
    static func run(_ machine: inout Machine, until time: NIODeadline) -> [Machine.TimerAction] {
        var actions: [Machine.TimerAction] = []
        while true {
            let due = Machine.Timer.allCases.compactMap { timer in machine.deadline(timer).map { (timer, $0) } }
                .filter { $0.1 <= time }.min { $0.1 < $1.1 }
            guard let (timer, deadline) = due else { return actions }
            let action = machine.timerFired(timer, at: deadline)
            if action != .none { actions.append(action) }
        }
    }

    /// Opens `id` at `time` (HEADERS; `awaitingBody`: without END_STREAM).
    static func open(_ machine: inout Machine, _ id: Int, at time: NIODeadline, awaitingBody: Bool = true) {
        let opening = machine.streamOpened(HTTP2StreamID(id), advertisedLimit: 1000)
        #expect(opening == .open(counted: true))
        machine.requestStarted(HTTP2StreamID(id), at: time, awaitingBody: awaitingBody)
    }

    /// Opens `id`, ends its request and judges it at `time`.
    static func judge(_ machine: inout Machine, _ id: Int, at time: NIODeadline) {
        open(&machine, id, at: time, awaitingBody: false)
        let ended = machine.requestEnded(HTTP2StreamID(id))
        #expect(ended)
        #expect(machine.mayServe(HTTP2StreamID(id)))
        _ = machine.requestReceived(at: time)
        machine.judged(HTTP2StreamID(id))
    }

    /// Opens `id` at `time` and the client resets it at once.
    static func openAndReset(_ machine: inout Machine, _ id: Int, at time: NIODeadline) -> Machine.PeerReset {
        open(&machine, id, at: time)
        return machine.streamReset(HTTP2StreamID(id), at: time)
    }

    // MARK: First request

    @Test("no request: closed at the first-request timeout, not a moment before")
    func firstRequestTimeout() {
        var machine = Self.started()
        #expect(machine.deadline(.firstRequest) == Self.t0 + .seconds(10))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(10) - .milliseconds(1)).isEmpty)
        #expect(machine.phase == .open)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(10)) == [.closeWithoutRequest])
        #expect(machine.phase == .closed)
        #expect(Machine.Timer.allCases.allSatisfy { machine.deadline($0) == nil })
    }

    @Test("the timers start once: a later start (the first frame after the handshake) moves no deadline")
    func startsOnce() {
        var machine = Machine(limits: Self.limits)
        #expect(Machine.Timer.allCases.allSatisfy { machine.deadline($0) == nil })
        let first = machine.start(at: Self.t0)
        let second = machine.start(at: Self.t0 + .seconds(5))
        #expect(first)
        #expect(!second)
        #expect(machine.deadline(.firstRequest) == Self.t0 + .seconds(10))
        #expect(machine.deadline(.idle) == Self.t0 + .seconds(60))
    }

    @Test("a request's HEADERS stop the first-request timeout")
    func firstRequestArrives() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0 + .seconds(9))
        #expect(machine.deadline(.firstRequest) == nil)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(30)).isEmpty)
        #expect(machine.phase == .open)
    }

    // MARK: Body timeout

    @Test("a body not ended within the body timeout is refused at it, not before; the connection stays open")
    func bodyTimeout() {
        var machine = Self.started()
        Self.open(&machine, 1, at: Self.t0 + .seconds(1))
        Self.open(&machine, 3, at: Self.t0 + .seconds(2))
        #expect(machine.deadline(.body) == Self.t0 + .seconds(4))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(4) - .milliseconds(1)).isEmpty)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(4)) == [.refuseOverdue([1])])
        #expect(!machine.isPending(1) && machine.isPending(3))
        // Re-armed for the next pending stream.
        #expect(machine.deadline(.body) == Self.t0 + .seconds(5))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(5)) == [.refuseOverdue([3])])
        #expect(machine.deadline(.body) == nil)
        #expect(machine.phase == .open)
    }

    @Test("a body that ends in time is not refused; the check finds nothing overdue")
    func bodyInTime() {
        var machine = Self.started()
        Self.open(&machine, 1, at: Self.t0)
        machine.bodyReceived(1, bytes: 100)
        #expect(machine.pendingBodyBytes == 100)
        let ended = machine.requestEnded(1)
        #expect(ended)
        #expect(machine.pendingBodyBytes == 0)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(3)) == [.refuseOverdue([])])
        #expect(machine.deadline(.body) == nil)
    }

    @Test("HEADERS that end the stream arm no body check")
    func noBodyNoCheck() {
        var machine = Self.started()
        Self.open(&machine, 1, at: Self.t0, awaitingBody: false)
        #expect(machine.deadline(.body) == nil)
    }

    // MARK: Idle timeout

    @Test("idle: GOAWAY IdleTimeout exactly the idle timeout after the last frame, not before")
    func idleTimeout() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0)  // no first-request timeout
        #expect(machine.deadline(.idle) == Self.t0 + .seconds(60))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(60) - .milliseconds(1)).isEmpty)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(60)) == [.idleTimeout])
        #expect(machine.deadline(.idle) == nil)
    }

    @Test("activity moves the idle timer: checked at its deadline, then rescheduled from the last frame or answer")
    func idleRescheduledByActivity() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0 + .seconds(1))
        let read = machine.frameReceived(on: 1, at: Self.t0 + .seconds(20))
        #expect(read)
        machine.answerWritten(at: Self.t0 + .seconds(30))
        // One timer, not one per frame: the deadline stays until it fires.
        #expect(machine.deadline(.idle) == Self.t0 + .seconds(60))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(60)).isEmpty)
        #expect(machine.deadline(.idle) == Self.t0 + .seconds(90))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(90) - .milliseconds(1)).isEmpty)
        #expect(Self.run(&machine, until: Self.t0 + .seconds(90)) == [.idleTimeout])
    }

    @Test("the idle timer does nothing once draining")
    func idleWhileDraining() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0)
        machine.answerDelayed(1, until: Self.t0 + .seconds(100))
        #expect(machine.goAway(at: Self.t0, linger: true)?.then == nil)
        #expect(machine.timerFired(.idle, at: Self.t0 + .seconds(60)) == .none)
        #expect(machine.deadline(.idle) == nil)
    }

    // MARK: Rapid reset

    @Test("more than the limit of resets within the window: ENHANCE_YOUR_CALM")
    func resetsWithinWindow() {
        var machine = Self.started()
        for (i, id) in [1, 3, 5].enumerated() {
            #expect(Self.openAndReset(&machine, id, at: Self.t0 + .seconds(Int64(i))) == .pending(incomplete: true))
        }
        #expect(Self.openAndReset(&machine, 7, at: Self.t0 + .seconds(29)) == .tooMany(incomplete: true, resets: 4))
    }

    @Test("the same resets spread over more than the window: no GOAWAY")
    func resetsSpreadOut() {
        var machine = Self.started()
        for id in [1, 3, 5] { #expect(Self.openAndReset(&machine, id, at: Self.t0) == .pending(incomplete: true)) }
        #expect(Self.openAndReset(&machine, 7, at: Self.t0 + .seconds(31)) == .pending(incomplete: true))
        #expect(Self.openAndReset(&machine, 9, at: Self.t0 + .seconds(32)) == .pending(incomplete: true))
        #expect(machine.phase == .open)
    }

    @Test("the window's edge: a reset exactly the window ago has left it; a nanosecond less and it counts")
    func resetWindowBoundary() {
        var inside = Self.started()
        for id in [1, 3, 5] { _ = Self.openAndReset(&inside, id, at: Self.t0) }
        let justInside = Self.t0 + .seconds(30) - .nanoseconds(1)
        #expect(Self.openAndReset(&inside, 7, at: justInside) == .tooMany(incomplete: true, resets: 4))

        var edge = Self.started()
        for id in [1, 3, 5] { _ = Self.openAndReset(&edge, id, at: Self.t0) }
        #expect(Self.openAndReset(&edge, 7, at: Self.t0 + .seconds(30)) == .pending(incomplete: true))
    }

    @Test("resets of streams not pending are ignored; a delayed answer's counts; none count while draining")
    func resetsThatDoNotCount() {
        var machine = Self.started()
        #expect(machine.streamReset(99, at: Self.t0) == .ignored)
        Self.judge(&machine, 1, at: Self.t0)
        #expect(machine.streamReset(1, at: Self.t0) == .ignored)  // answered
        Self.judge(&machine, 3, at: Self.t0)
        machine.answerDelayed(3, until: Self.t0 + .seconds(1))
        #expect(machine.describe(3) == "pending (answer delayed)")
        #expect(machine.streamReset(3, at: Self.t0) == .pending(incomplete: false))
        let stillDue = machine.delayedAnswerDue(3)
        #expect(!stillDue)

        var draining = Self.started()
        Self.judge(&draining, 1, at: Self.t0)
        draining.answerDelayed(1, until: Self.t0 + .seconds(1))
        for id in [3, 5, 7, 9] { Self.open(&draining, id, at: Self.t0) }
        _ = draining.goAway(at: Self.t0, linger: true)
        // Streams above the last one were dropped with the GOAWAY; the one below is pending, not counted.
        #expect(draining.streamReset(3, at: Self.t0) == .ignored)
        #expect(draining.streamReset(1, at: Self.t0) == .pending(incomplete: false))
    }

    // MARK: Concurrent streams

    @Test("before the SETTINGS ack 100 streams are allowed whatever is advertised; after it, the advertised limit")
    func concurrentStreamLimit() {
        var machine = Self.started()
        for i in 0..<100 {
            #expect(machine.streamOpened(HTTP2StreamID(1 + 2 * i), advertisedLimit: 2) == .open(counted: true))
        }
        #expect(machine.streamOpened(201, advertisedLimit: 2) == .refuse(open: 100))
        #expect(machine.streamOpened(201, advertisedLimit: 2) == .notNew)

        var acked = Self.started()
        acked.settingsAcked()
        #expect(acked.streamOpened(1, advertisedLimit: 2) == .open(counted: true))
        #expect(acked.streamOpened(3, advertisedLimit: 2) == .open(counted: true))
        #expect(acked.streamOpened(5, advertisedLimit: 2) == .refuse(open: 2))
        let closed = acked.streamClosed(1)
        #expect(closed.wasOpen && !closed.wasPending)
        #expect(acked.streamOpened(7, advertisedLimit: 2) == .open(counted: true))
        #expect(acked.forgetOpenStreams() == 2)
        #expect(acked.openStreams.isEmpty)
    }

    // MARK: Draining

    @Test("GOAWAY names the last judged stream; streams above it are dropped and ignored; closes once drained")
    func draining() {
        var machine = Self.started()
        let t = Self.t0 + .seconds(1)
        Self.judge(&machine, 1, at: t)
        Self.judge(&machine, 3, at: t)
        machine.answerDelayed(3, until: t + .seconds(1))
        Self.open(&machine, 5, at: t)
        machine.bodyReceived(5, bytes: 10)

        let goAway = machine.goAway(at: t, linger: true)
        #expect(goAway == Machine.GoAway(lastStream: 3, dropped: [5], pending: 1, then: nil))
        #expect(machine.phase == .draining(lastStream: 3))
        #expect(machine.pendingBodyBytes == 0)
        #expect(machine.goAway(at: t, linger: true) == nil)  // one GOAWAY
        // The longest delayed answer plus the slack, within the grace period.
        #expect(machine.deadline(.drain) == t + .seconds(1) + .milliseconds(250))
        let readAbove = machine.frameReceived(on: 5, at: t)
        #expect(!readAbove)
        let readFarAbove = machine.frameReceived(on: 7, at: t)
        #expect(!readFarAbove)
        let readLast = machine.frameReceived(on: 3, at: t)
        #expect(readLast)
        #expect(machine.closeIfDrained(at: t) == nil)  // 3 still to answer

        let answered = t + .seconds(1)
        let answerDue = machine.delayedAnswerDue(3)
        #expect(answerDue)
        #expect(machine.closeIfDrained(at: answered) == .linger)
        #expect(machine.closeIfDrained(at: answered) == nil)  // already lingering
        #expect(machine.deadline(.drain) == answered + .seconds(1))
        #expect(Self.run(&machine, until: answered + .seconds(1) - .milliseconds(1)).isEmpty)
        #expect(Self.run(&machine, until: answered + .seconds(1)) == [.lingerOver])
        #expect(machine.phase == .closed)
    }

    @Test("GOAWAY with incomplete requests up to last-stream-id: the whole grace for them, then REFUSED_STREAM")
    func incompleteUpToLastStreamGetTheGraceThenRefused() {
        var limits = Self.limits
        limits.bodyTimeout = .seconds(30)  // the grace, not the body timeout, is what ends the wait here
        var machine = Self.started(limits)
        let t = Self.t0 + .seconds(1)
        // 1, 3 and 5 opened; 5 judged first (its body came whole), 1 and 3 still arriving (held back by flow control).
        Self.open(&machine, 1, at: t)
        Self.open(&machine, 3, at: t)
        Self.judge(&machine, 5, at: t)
        Self.open(&machine, 7, at: t)
        let goAway = machine.goAway(at: t, linger: true)
        #expect(goAway == Machine.GoAway(lastStream: 5, dropped: [7], pending: 2, then: nil))
        // Not the short slack for delayed answers: the whole grace period, as the bodies may take a while.
        #expect(machine.deadline(.drain) == t + limits.gracePeriod)
        // Stream 1's body arrives late: still read, judged and answered.
        let read = machine.frameReceived(on: 1, at: t + .seconds(2))
        #expect(read)
        machine.bodyReceived(1, bytes: 4000)
        let ended = machine.requestEnded(1)
        #expect(ended)
        #expect(machine.mayServe(1))
        machine.judged(1)
        #expect(machine.closeIfDrained(at: t + .seconds(2)) == nil)  // 3 still incomplete
        // Stream 3's never completes: refused at the grace's end, never dropped without a word; then the linger (the
        // client may still be writing its body), and the close.
        let graceEnd = t + limits.gracePeriod
        #expect(Self.run(&machine, until: graceEnd) == [.graceOver(unanswered: 1, refused: [3], then: .linger)])
        #expect(machine.phase == .draining(lastStream: 5))
        #expect(!machine.isPending(3))
        #expect(Self.run(&machine, until: graceEnd + limits.goAwayLinger) == [.lingerOver])
        #expect(machine.phase == .closed)
    }

    @Test("A loop that fell behind: the old drain timer, run after the delayed answer started the linger, is stale")
    func staleDrainTimerDoesNotCutTheLinger() {
        var machine = Self.started()
        let t = Self.t0 + .seconds(1)
        Self.judge(&machine, 1, at: t)
        machine.answerDelayed(1, until: t + .seconds(2))
        Self.judge(&machine, 3, at: t)
        _ = machine.goAway(at: t, linger: true)
        let graceDrain = t + .seconds(2) + .milliseconds(250)
        #expect(machine.deadline(.drain) == graceDrain)

        // The event loop wakes 400 ms late: the delayed answer (due first) and the drain timer are both overdue and
        // run in one tick, the answer first. The answer starts the linger, which moves the drain deadline.
        let late = graceDrain + .milliseconds(150)
        let answerDue = machine.delayedAnswerDue(1)
        #expect(answerDue)
        #expect(machine.closeIfDrained(at: late) == .linger)
        #expect(machine.deadline(.drain) == late + Self.limits.goAwayLinger)
        // Then the old drain task runs in the same tick: before the new deadline, so nothing happens.
        #expect(machine.timerFired(.drain, at: late) == .none)
        #expect(machine.phase == .draining(lastStream: 3))
        #expect(machine.deadline(.drain) == late + Self.limits.goAwayLinger)
        // The linger ends at its own deadline.
        #expect(Self.run(&machine, until: late + Self.limits.goAwayLinger) == [.lingerOver])
        #expect(machine.phase == .closed)
    }

    @Test("A timer the machine no longer wants (its deadline dropped) does nothing when a late task fires it")
    func timerWithoutDeadlineIsStale() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0)  // the first request came: no first-request deadline any more
        #expect(machine.deadline(.firstRequest) == nil)
        #expect(machine.timerFired(.firstRequest, at: Self.t0 + .seconds(60)) == .none)
        #expect(machine.phase == .open)
    }

    @Test("GOAWAY with nothing pending: linger (at most the grace period), or close at once when shutting down")
    func goAwayWithNothingPending() {
        var idle = Self.started()
        Self.judge(&idle, 1, at: Self.t0)
        #expect(idle.goAway(at: Self.t0, linger: true)?.then == .linger)
        #expect(idle.deadline(.drain) == Self.t0 + Self.limits.goAwayLinger)

        var shortGrace = Self.limits
        shortGrace.gracePeriod = .milliseconds(300)
        var short = Self.started(shortGrace)
        #expect(short.goAway(at: Self.t0, linger: true)?.then == .linger)
        #expect(short.deadline(.drain) == Self.t0 + .milliseconds(300))

        var shutdown = Self.started()
        Self.judge(&shutdown, 1, at: Self.t0)
        #expect(shutdown.goAway(at: Self.t0, linger: false)?.then == .close)
        #expect(shutdown.phase == .closed)
    }

    @Test("graceful close: GOAWAY, then closed when the grace period ends with answers still pending")
    func gracefulCloseThenGraceExpiry() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0)
        machine.answerDelayed(1, until: Self.t0 + .seconds(60))
        #expect(machine.gracefulCloseRequested() == .goAway)
        let goAway = machine.goAway(at: Self.t0, linger: false)
        #expect(goAway?.lastStream == 1 && goAway?.then == nil)
        #expect(machine.gracefulCloseRequested() == .none)  // the grace runs
        #expect(machine.deadline(.drain) == Self.t0 + .seconds(5))
        #expect(Self.run(&machine, until: Self.t0 + .seconds(5) - .milliseconds(1)).isEmpty)
        #expect(
            Self.run(&machine, until: Self.t0 + .seconds(5)) == [.graceOver(unanswered: 1, refused: [], then: .close)])
        #expect(machine.phase == .closed)
        let stillDue = machine.delayedAnswerDue(1)
        #expect(!stillDue)
        #expect(machine.gracefulCloseRequested() == .closeChannel)
    }

    @Test("graceful close while lingering after a GOAWAY: close now")
    func gracefulCloseWhileLingering() {
        var machine = Self.started()
        Self.judge(&machine, 1, at: Self.t0)
        #expect(machine.goAway(at: Self.t0, linger: true)?.then == .linger)
        #expect(machine.gracefulCloseRequested() == .finish)
        #expect(machine.phase == .closed)
        #expect(machine.deadline(.drain) == nil)
    }

    // MARK: Flow control, backpressure, errors, faults

    @Test("the connection window is credited once half is used, unless pending bodies hold the budget")
    func pendingBodyBudget() {
        var machine = Self.started()
        machine.windowUpdated(to: 40000)
        #expect(machine.connectionCredit(channelActive: true) == nil)  // less than half used
        machine.windowUpdated(to: 30000)
        #expect(machine.connectionCredit(channelActive: false) == nil)
        Self.open(&machine, 1, at: Self.t0)
        machine.bodyReceived(1, bytes: Machine.pendingBodyBudget)
        #expect(machine.connectionCredit(channelActive: true) == nil)
        let ended = machine.requestEnded(1)
        #expect(ended)
        #expect(machine.connectionCredit(channelActive: true) == Machine.connectionWindow - 30000)
        #expect(machine.connectionCredit(channelActive: true) == nil)  // credited
    }

    @Test("reading pauses while the channel cannot write and resumes after, unless closed")
    func readPausing() {
        var machine = Self.started()
        #expect(machine.writabilityChanged(isWritable: false) == false)
        #expect(machine.writabilityChanged(isWritable: false) == nil)
        #expect(machine.writabilityChanged(isWritable: true) == true)
        #expect(machine.writabilityChanged(isWritable: true) == nil)
        #expect(machine.writabilityChanged(isWritable: false) == false)
        machine.stop()
        #expect(machine.writabilityChanged(isWritable: true) == nil)
        #expect(!machine.readingPaused)
    }

    @Test("errors: a stream error goes on; after our GOAWAY, NIOHTTP2's complaints are ignored; else close")
    func errors() {
        var machine = Self.started()
        #expect(machine.errorCaught(isHTTP2Error: true, goAwaysOnWire: 0) == .streamError)
        Self.judge(&machine, 1, at: Self.t0)
        machine.answerDelayed(1, until: Self.t0 + .seconds(1))
        _ = machine.goAway(at: Self.t0, linger: true)
        #expect(machine.errorCaught(isHTTP2Error: true, goAwaysOnWire: 1) == .ignoredAfterGoAway)
        #expect(machine.errorCaught(isHTTP2Error: false, goAwaysOnWire: 1) == .close)
        #expect(machine.phase == .closed)

        var nio = Self.started()
        Self.judge(&nio, 1, at: Self.t0)
        nio.answerDelayed(1, until: Self.t0 + .seconds(1))
        _ = nio.goAway(at: Self.t0, linger: true)
        #expect(nio.errorCaught(isHTTP2Error: true, goAwaysOnWire: 2) == .close)  // NIOHTTP2 wrote its own
    }

    @Test("GOAWAY faults: after_streams 0 refuses the stream; after N fires on the Nth answer; none once draining")
    func goAwayFaults() {
        let refusing = MockFault(id: "r", kind: .goAway(afterStreams: 0, reason: .shutdown))
        let afterTwo = MockFault(id: "a", kind: .goAway(afterStreams: 2, reason: .idleTimeout))
        var machine = Self.started()
        #expect(machine.refusingGoAway(in: [afterTwo, refusing])?.id == "r")
        #expect(machine.refusingGoAway(in: [afterTwo]) == nil)
        #expect(machine.countAnswer(matching: [afterTwo, refusing]) == nil)
        let fired = machine.countAnswer(matching: [afterTwo])
        #expect(fired?.id == "a" && fired?.reason == .idleTimeout)
        _ = machine.goAway(at: Self.t0, linger: true)
        #expect(machine.refusingGoAway(in: [refusing]) == nil)
        #expect(machine.countAnswer(matching: [afterTwo]) == nil)
    }

    @Test("the idle time before a request counts from the last request or answer")
    func idleBeforeRequest() {
        var machine = Self.started()
        #expect(machine.requestReceived(at: Self.t0 + .seconds(1)) == nil)
        machine.answerWritten(at: Self.t0 + .seconds(2))
        #expect(machine.requestReceived(at: Self.t0 + .seconds(7)) == .seconds(5))
    }
}
