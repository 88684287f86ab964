import Foundation
package import KKPushClient
package import KKPushCore

/// The broadcasts of a `send-batch` input: lines that name a `channel` instead of a `token`. Each is sent
/// by itself, in its place in the input (the next line is read once its answer is in), through
/// ``APNsBroadcastClient`` with the batch's credential; its answer becomes an outcome like a device push's, so
/// it is counted, summarised and resumed the same way.
package struct BatchBroadcaster: Sendable {
    package let client: APNsBroadcastClient
    /// Whether ``BroadcastRules`` judge each broadcast before it is sent (off with `--no-preflight`).
    package let preflight: Bool

    package init(client: APNsBroadcastClient, preflight: Bool) {
        self.client = client
        self.preflight = preflight
    }

    /// The bundle id of a broadcast for the batch's `--topic`: ``BroadcastRules/broadcastBundleID(forTopic:)``, the
    /// rule `channel` and `send --channel` apply too. A Live Activity topic's suffix is dropped (the batch's device
    /// pushes need it, a broadcast's path must not have it) and the batch says so once; any other suffix stays,
    /// for pre-flight to refuse (`TopicDisallowed`: the line fails, exit 1).
    package static func bundleID(forTopic topic: String) -> String {
        BroadcastRules.broadcastBundleID(forTopic: topic).bundleID
    }

    /// `configuration` for the broadcast client: the batch judges each broadcast itself (``send(_:to:)``, where a
    /// refusal becomes an outcome), so the client does not judge it a second time.
    package static func withoutPreflight(_ configuration: APNsClientConfiguration) -> APNsClientConfiguration {
        var c = configuration
        c.preflight = false
        return c
    }

    /// The key a channel line has in `--resume`'s books, where device lines have their token.
    package static func resumeKey(channel: String) -> String { "channel:" + channel }

    /// Sends one broadcast; every way it can end is an outcome (pre-flight, a refusal, no answer).
    package func send(_ request: BroadcastRequest, to endpoint: APNsEndpoint) async -> PushOutcome {
        let started = ContinuousClock.now
        if preflight {
            let problems = BroadcastRules.preflight(request)
            if let first = problems.first(where: { $0.severity == .error }) {
                return PushOutcome(
                    result: .failed(
                        PushFailure(
                            kind: .preflight,
                            message: "Not sent: APNs would reject this broadcast with \(first.code). \(first.message)")),
                    duration: .zero, attempts: 0, endpoint: endpoint, problems: problems)
            }
        }
        do {
            let r = try await client.broadcast(request, to: endpoint)
            let duration = ContinuousClock.now - started
            if r.isSuccess {
                return PushOutcome(
                    result: .accepted(apnsID: r.requestID, apnsUniqueID: nil), duration: duration, attempts: 1,
                    endpoint: endpoint)
            }
            let reason = r.reason ?? APNsReason(rawValue: "HTTP \(r.status)")
            return PushOutcome(
                result: .rejected(PushRejection(status: r.status, reason: reason, apnsID: r.requestID)),
                duration: duration, attempts: 1, endpoint: endpoint)
        } catch {
            let message = (error as? KKPushError)?.message ?? "\(error)"
            return PushOutcome(
                result: .failed(PushFailure(kind: .connection, message: message)),
                duration: ContinuousClock.now - started, attempts: 1, possiblyDuplicated: true, endpoint: endpoint)
        }
    }
}
