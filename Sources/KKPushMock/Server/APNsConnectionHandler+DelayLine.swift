import NIOCore
import NIOHTTP2

/// The answers a `delay` fault holds on one connection.
///
/// A delay fault holds every answer it matches for the same time, so their due times come in the order the
/// requests were judged: such answers wait in a line (first in, first out) under one timer, armed for the head
/// of the line, which answers every one that is due when it fires. An answer due before the last of the line (a
/// second fault with a shorter delay) gets a task of its own. Why: with a round trip of 50 ms a connection holds a
/// thousand answers, and a task apiece (its promise, its closure and a place in the event loop's heap of
/// scheduled tasks) made the delay the larger part of the mock's work per request.
///
/// A stream reset while its answer waits is not taken out of the line: the connection's machine forgets it, and
/// its answer is dropped when it comes due (``APNsConnectionHandler/answerDelayed(_:context:)``).
struct DelayedAnswers {
    /// One held answer.
    struct Answer {
        var id: HTTP2StreamID
        var due: NIODeadline
        var outcome: MockRequestProcessor.Outcome
        var goAways: [MockFault]
        var resetAfterAnswer: Bool
        var started: NIODeadline
    }

    /// Answers in the order they come due.
    private(set) var line = CircularBuffer<Answer>()
    /// The timer of the line's head.
    var lineTimer: Scheduled<Void>?
    /// Answers out of the line's order, each with its own task.
    var scheduled: [HTTP2StreamID: Scheduled<Void>] = [:]

    /// Answers held (including those of streams reset meanwhile, until they come due).
    var count: Int { line.count + scheduled.count }

    /// Whether `due` can join the line: it comes due no sooner than the last answer in it.
    func fitsLine(_ due: NIODeadline) -> Bool { line.last.map { $0.due <= due } ?? true }

    mutating func append(_ answer: Answer) { line.append(answer) }

    /// The head of the line if it is due at `now`, taken out of the line.
    mutating func popDue(at now: NIODeadline) -> Answer? {
        guard let head = line.first, head.due <= now else { return nil }
        return line.removeFirst()
    }

    /// When the line's head comes due (nil: the line is empty).
    var nextDue: NIODeadline? { line.first?.due }

    /// Drops every held answer and cancels their timers (the connection closes or goes silent).
    mutating func cancelAll() {
        lineTimer?.cancel()
        lineTimer = nil
        line.removeAll()
        for (_, task) in scheduled { task.cancel() }
        scheduled.removeAll()
    }

    /// A stream reset while its answer waits: its own task, if it has one, is cancelled.
    mutating func cancel(_ id: HTTP2StreamID) {
        scheduled.removeValue(forKey: id)?.cancel()
    }
}

extension APNsConnectionHandler {
    /// Holds `answer` until its due time: in the line if it fits, else on a task of its own.
    func hold(_ answer: DelayedAnswers.Answer, context: ChannelHandlerContext) {
        if delayed.fitsLine(answer.due) {
            delayed.append(answer)
            if delayed.lineTimer == nil { armLine(context: context) }
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        delayed.scheduled[answer.id] = context.eventLoop.scheduleTask(deadline: answer.due) {
            let (handler, context) = loopBound.value
            handler.delayed.scheduled[answer.id] = nil
            handler.answerDelayed(answer, context: context)
            handler.finishDelayedAnswers(context: context)
        }
    }

    /// Arms the line's timer for its head.
    private func armLine(context: ChannelHandlerContext) {
        guard let due = delayed.nextDue else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        delayed.lineTimer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.delayed.lineTimer = nil
            handler.answerLine(context: context)
        }
    }

    /// Answers every answer of the line that is due, flushes once, and arms the timer for the next.
    private func answerLine(context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        while let answer = delayed.popDue(at: now) {
            answerDelayed(answer, context: context)
        }
        finishDelayedAnswers(context: context)
        if delayed.lineTimer == nil { armLine(context: context) }
    }
}
