import Foundation
package import KKPushClient
package import KKPushCore
package import KantineKoning

/// `diagnose --probe` of a broadcast channel: the channel read (`GET /1/apps/<bundle id>/channels`) in both
/// environments at once, each answer kept as it came (the channel exists with its storage policy, APNs' rejection,
/// or a failure in words).
package enum ChannelRead {
    package struct Inputs {
        package var channelID: String
        /// The app's bundle id, without a push type's suffix (a suffixed topic is its own finding).
        package var bundleID: String
        package var credential: APNsCredential
        package var sandbox: APNsEndpoint
        package var production: APNsEndpoint
        package var proxy: String?
        package var timeout: Duration

        package init(
            channelID: String, bundleID: String, credential: APNsCredential, sandbox: APNsEndpoint,
            production: APNsEndpoint, proxy: String?, timeout: Duration
        ) {
            self.channelID = channelID
            self.bundleID = bundleID
            self.credential = credential
            self.sandbox = sandbox
            self.production = production
            self.proxy = proxy
            self.timeout = timeout
        }
    }

    /// The bundle id a channel read goes to for `topic`: the plain bundle id of a suffixed topic.
    package static func bundleID(forTopic topic: String) -> String {
        PushType.implied(byTopic: topic)?.bundleID(fromTopic: topic) ?? topic
    }

    package static func run(_ inputs: Inputs) async throws -> DiagnosisFacts.Channel {
        let client = try APNsBroadcastClient(
            configuration: APNsClientConfiguration(
                credential: inputs.credential, sandboxEndpoint: inputs.sandbox, productionEndpoint: inputs.production,
                connectTimeout: inputs.timeout, requestTimeout: inputs.timeout, maxConnections: 1,
                proxyURL: inputs.proxy, retry: .none, preflight: false))
        let request = ChannelRequest.read(bundleID: inputs.bundleID, channelID: inputs.channelID)
        @Sendable func read(_ endpoint: APNsEndpoint) async -> DiagnosisFacts.ChannelAnswer {
            do {
                let r = try await client.perform(request, at: endpoint)
                if r.isSuccess { return .exists(storagePolicy: r.storagePolicy?.rawValue ?? 0) }
                return .rejected(status: r.status, reason: r.reason ?? APNsReason("HTTP \(r.status)"))
            } catch {
                return .failed(message: ErrorWords.describe(error))
            }
        }
        async let s = read(inputs.sandbox)
        async let p = read(inputs.production)
        return DiagnosisFacts.Channel(id: inputs.channelID, sandbox: await s, production: await p)
    }
}
