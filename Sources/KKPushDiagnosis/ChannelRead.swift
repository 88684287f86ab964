import Foundation
package import KKPushClient
package import KKPushCore
package import KantineKoning

/// `diagnose --probe` of a broadcast channel: the channel read (`GET /1/apps/<bundle id>/channels`) in both
/// environments at once, each answer kept as it came (the channel exists with its storage policy, APNs' rejection,
/// or a failure in words).
package enum ChannelRead {
    /// The bundle id a channel read goes to for `topic`: the plain bundle id of a suffixed topic.
    package static func bundleID(forTopic topic: String) -> String {
        PushType.implied(byTopic: topic)?.bundleID(fromTopic: topic) ?? topic
    }

    /// Reads channel `channelID` of `bundleID` (without a push type's suffix: ``bundleID(forTopic:)``) at `sandbox`
    /// and `production` with `credential`, each read bounded by `timeout`.
    package static func run(
        channelID: String, bundleID: String, credential: APNsCredential, sandbox: APNsEndpoint,
        production: APNsEndpoint, proxy: String?, timeout: Duration
    ) async throws -> DiagnosisFacts.Channel {
        let client = try APNsBroadcastClient(
            configuration: APNsClientConfiguration(
                credential: credential, sandboxEndpoint: sandbox, productionEndpoint: production,
                connectTimeout: timeout, requestTimeout: timeout, maxConnections: 1, proxyURL: proxy, retry: .none,
                preflight: false))
        let request = ChannelRequest.read(bundleID: bundleID, channelID: channelID)
        @Sendable func read(_ endpoint: APNsEndpoint) async -> DiagnosisFacts.ChannelAnswer {
            do {
                let r = try await client.perform(request, at: endpoint)
                if r.isSuccess { return .exists(storagePolicy: r.storagePolicy?.rawValue ?? 0) }
                return .rejected(status: r.status, reason: r.reason ?? APNsReason("HTTP \(r.status)"))
            } catch {
                return .failed(message: ErrorWords.describe(error))
            }
        }
        async let s = read(sandbox)
        async let p = read(production)
        return DiagnosisFacts.Channel(id: channelID, sandbox: await s, production: await p)
    }
}
