package import Foundation
package import KKPushActivities
import KKPushAuth
package import KKPushClient
package import KKPushCore
import Synchronization

// send-batch's Live Activity lines: a JSON line with `activity_key` and `activity_event` starts, updates or ends one
// Live Activity through the activity registry (the token it goes to, the idempotent start, the start budget), as the
// push queue's Live Activity rows do (<doc:SendingPushes#Live-Activity-lines>).

/// One Live Activity line as read: what the registry plans from.
package struct BatchActivityLine: Sendable {
    package var key: String
    package var event: LiveActivityEvent
    /// The device the registry knows (`device`, else the line's token).
    package var device: String?
    /// The line's `token`: a start's push-to-start token (nil: the device's current one); ignored for an update or
    /// end, which go to the activity's update token.
    package var token: String?
    package var payload: [UInt8]
    package var topic: String
    package var endpoint: APNsEndpoint
    package var credential: String?
    package var overridesEnvironment: Bool
}

/// The registry of a batch's Live Activity lines: plans each line, and gives APNs' answer to each push it planned.
///
/// What a line becomes: a push the registry planned (sent like any line, its result line naming the token it went
/// to); a **second start of a key** sends nothing and is counted apart (``BatchLedger/Counts/activityExisting``, no
/// result line, not a failure), since the activity the line asks for exists; a start past the device's start budget
/// (refused, not deferred: a batch does not wait an hour), an update or end of an
/// activity without an update token yet, ended or unknown, or a payload the registry cannot build from, is not sent:
/// its result line is failed `bad-input` naming the line, the key, the registry's code and the fix (`--resume` sends
/// such a line again later, when the budget or the token may be there).
package final class BatchActivities: Sendable {
    package let registry: any ActivityRegistry
    private struct State {
        var pushes: [Int: ActivityPush] = [:]
        var tasks: [Task<Void, Never>] = []
        var failures: [String] = []
    }
    private let state = Mutex(State())

    /// The caller's words for the registry's messages (its API inputs, `(activityKey)`, as the caller's flags or
    /// fields): a refused line's result line says them.
    let words: @Sendable (String) -> String

    package init(registry: any ActivityRegistry, words: @escaping @Sendable (String) -> String = { $0 }) {
        self.registry = registry
        self.words = words
    }

    /// What a line became.
    package enum Planned: Sendable {
        case send(PushBatchItem, ActivityPush)
        case skip(String)
        case refused(String)
    }

    /// Plans line `number` (its text's `line`) at `now`.
    package func plan(_ line: BatchActivityLine, number: Int, now: Date = Date()) async -> Planned {
        switch await planned(line, number: number, now: now) {
        case .refused(let message): .refused(words(message))
        case let other: other
        }
    }

    private func planned(_ line: BatchActivityLine, number: Int, now: Date) async -> Planned {
        func refused(_ error: KKPushError) -> Planned {
            .refused(
                "Line \(number): activity \(line.key) (\(line.event.rawValue)): \(error.code.rawValue): \(error.message)\(error.fix.map { " \($0)" } ?? "")"
            )
        }
        func item(_ push: ActivityPush) -> Planned {
            .send(PushBatchItem(request: push.request, endpoint: line.endpoint, credential: line.credential), push)
        }
        do {
            switch line.event {
            case .start:
                guard let device = line.device ?? line.token else {
                    return .refused(
                        "Line \(number): activity \(line.key) (start) names no device: give `device` (the device the registry knows the push-to-start token of) or `token` (a push-to-start token)."
                    )
                }
                let request = try ActivityPayloadRequests.start(
                    key: line.key, device: device, topic: line.topic, payload: line.payload,
                    pushToStartToken: line.token, overBudget: .refuse)
                switch try await registry.planStart(request, at: now) {
                case .send(let push): return item(push)
                case .existing: return .skip("activity-exists")
                case .deferred(let until, let reason):
                    return .refused(
                        "Line \(number): activity \(line.key) (start): activity-start-budget: \(reason) The budget frees a place at \(ISO8601DateFormatter().string(from: until)); send the line again then (a resumed run sends it)."
                    )
                case .refused(let error): return refused(error)
                }
            case .update:
                let plan = try await registry.planUpdate(
                    ActivityPayloadRequests.update(key: line.key, payload: line.payload), at: now)
                switch plan {
                case .send(let push): return item(push)
                case .refused(let error): return refused(error)
                }
            default:
                let plan = try await registry.planEnd(
                    ActivityPayloadRequests.end(key: line.key, payload: line.payload), at: now)
                switch plan {
                case .send(let push): return item(push)
                case .refused(let error): return refused(error)
                }
            }
        } catch let error as KKPushError {
            return refused(error)
        } catch {
            return .refused("Line \(number): activity \(line.key): the activity registry failed: \(error)")
        }
    }

    /// The push admitted at `position`, for its answer.
    package func admitted(position: Int, push: ActivityPush) {
        state.withLock { $0.pushes[position] = push }
    }

    /// Gives APNs' answer of `result` to the registry when its push is one this batch planned (from the client's
    /// loop thread: recorded by a task of its own, awaited by ``finish()``).
    package func answer(_ result: PushResult) {
        guard let push = state.withLock({ $0.pushes.removeValue(forKey: result.index) }) else { return }
        let outcome = result.outcome
        let answer = push.answer(
            status: outcome.httpStatus, reason: outcome.rejection?.reason.rawValue, apnsID: outcome.apnsID, at: Date())
        let registry = self.registry
        let task = Task {
            do {
                try await registry.recordAnswer(answer)
            } catch {
                let words = (error as? KKPushError)?.message ?? "\(error)"
                self.state.withLock { $0.failures.append("activity \(answer.key): \(words)") }
            }
        }
        state.withLock { $0.tasks.append(task) }
    }

    /// Waits for every answer to be recorded; the ones the registry could not record, in words.
    package func finish() async -> [String] {
        while true {
            let tasks = state.withLock { s -> [Task<Void, Never>] in
                defer { s.tasks.removeAll() }
                return s.tasks
            }
            if tasks.isEmpty { break }
            for task in tasks { await task.value }
        }
        return state.withLock { $0.failures }
    }
}

extension BatchLines {
    /// The keys only a Live Activity line has.
    package static let activityKeys: Set<String> = ["activity_key", "activity_event", "device"]

    /// A JSON line with `activity_key` (and `activity_event`): checked here, planned by the registry when it is read
    /// (``BatchActivities``). Without a registry (``activities``) it is refused, never sent to its `token` as it
    /// stands.
    func activityItem(_ members: [String: JSONValue], line number: Int, bad: (String, String) -> LineItem) -> LineItem {
        let token = members["token"]?.stringValue.map { DeviceToken.normalize($0).token ?? $0 }
        guard let keyValue = members["activity_key"], let key = keyValue.stringValue else {
            return bad(token ?? "", "`activity_event` without `activity_key`: a Live Activity line names both.")
        }
        do {
            try ActivityPushes.checkKey(key)
        } catch {
            return bad(token ?? "", "`activity_key`: \(error.message)")
        }
        guard let eventText = members["activity_event"]?.stringValue,
            LiveActivityEvent.allCases.map(\.rawValue).contains(eventText)
        else {
            return bad(token ?? "", "`activity_event` must be start, update or end (activity \(key)).")
        }
        guard activities != nil else {
            return bad(
                token ?? "",
                "activity \(key) (\(eventText)): a Live Activity line needs an activity registry to know its token, and this batch was given none; nothing was sent."
            )
        }
        if members["channel"] != nil { return bad(token ?? "", "a Live Activity line cannot name a `channel`.") }
        var payload = template.payload
        if let value = members["payload"] {
            guard value.objectValue != nil else {
                return bad(token ?? "", "`payload` of activity \(key) must be a JSON object.")
            }
            payload = value.encoded()
        } else if !batchHasPayload {
            return bad(token ?? "", Self.noPayload)
        }
        if let value = members["token"], value.stringValue == nil {
            return bad("", "`token` is \(value.typeNameWithArticle), but must be a string of hex digits.")
        }
        var device: String?
        if let value = members["device"] {
            guard let text = value.stringValue, !text.trimmingWhitespace().isEmpty else {
                return bad(
                    token ?? "", "`device` is \(value.description), but must be the device's name in the registry.")
            }
            device = text
        }
        // The routing checks of every device push line (BatchInput.swift), the scope judged for the liveactivity topic.
        let route: LineRoute
        switch self.route(
            members, token: token ?? "", deviceToken: token ?? "",
            scopeTopic: { ActivityPushes.liveActivityTopic($0 ?? "") }, line: number, bad: bad)
        {
        case .refused(let item): return item
        case .route(let r): route = r
        }
        return .activity(
            BatchActivityLine(
                key: key, event: LiveActivityEvent(rawValue: eventText), device: device,
                token: eventText == "start" ? token : nil, payload: payload, topic: route.topic ?? "",
                endpoint: route.endpoint, credential: route.credential, overridesEnvironment: route.overridesEnvironment
            ))
    }
}
