import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushMock
import Synchronization

/// The web console's "send a test push" for `kkpush mock serve`: KKPushClient (libcurl, the code `kkpush send`
/// runs) sends to the mock's own listener, signed with the first private key the mock accepts for the
/// environment (Certificates/keys.json's test keys by default). Pre-flight and retries are off, so the page
/// shows the mock's own answer.
final class MockConsoleSender: Sendable {
    private let keySource = Mutex<(@Sendable () -> [MockKey])?>(nil)
    /// One provider-token cache per key id, so test pushes reuse their token as a real sender does.
    private let caches = Mutex<[String: ProviderTokenCache]>([:])

    /// Where the keys come from (the running server's: keys added through `POST /keys` count too).
    func useKeys(_ source: @escaping @Sendable () -> [MockKey]) { keySource.withLock { $0 = source } }

    /// The hook for ``MockServerConfiguration/testPushSender``.
    var hook: TestPushSender { { [self] request in await self.send(request) } }

    func send(_ r: TestPushRequest) async -> TestPushAnswer {
        let keys = keySource.withLock { $0 }?() ?? []
        var chosen: (MockKey, ES256PrivateKey)?
        for key in keys where key.allows(r.environment) {
            if let signing = try? ES256PrivateKey(pem: key.pem) {
                chosen = (key, signing)
                break
            }
        }
        guard let (key, signing) = chosen else {
            return TestPushAnswer(
                status: "failed", reason: "no-signing-key",
                error:
                    "The mock has no private key (.p8) for \(r.environment.rawValue) to sign a test push with: register one (Certificates/keys.json, --key-file or POST /keys with a .p8)."
            )
        }
        let cache = caches.withLock { caches in
            if let c = caches[key.keyID] { return c }
            let c = ProviderTokenCache(key: signing, keyID: key.keyID, teamID: key.teamID)
            caches[key.keyID] = c
            return c
        }
        let configuration = APNsClientConfiguration(
            credential: .token(cache), sandboxEndpoint: r.endpoint, productionEndpoint: r.endpoint,
            connectTimeout: .seconds(5), requestTimeout: .seconds(15), maxConnections: 1, retry: .none,
            preflight: false)
        if let channelID = r.channelID { return await broadcast(r, channelID: channelID, configuration: configuration) }
        let type = PushType(r.pushType ?? "alert")
        let request = NotificationRequest(
            deviceToken: r.token, topic: r.topic, pushType: type,
            priority: r.priority ?? type.defaultPriority,
            collapseID: r.collapseID, payload: r.payload)
        let outcome: PushOutcome
        do {
            outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(request, to: r.endpoint)
            }
        } catch {
            return TestPushAnswer(status: "failed", reason: "client", error: ErrorWords.describe(error))
        }
        let ms = outcome.durationMilliseconds
        switch outcome.result {
        case .accepted(let id, let unique):
            return TestPushAnswer(
                status: "accepted", httpStatus: outcome.httpStatus, apnsID: id, apnsUniqueID: unique,
                durationMilliseconds: ms)
        case .rejected(let rejection):
            return TestPushAnswer(
                status: "rejected", httpStatus: outcome.httpStatus, reason: rejection.reason.rawValue,
                apnsID: rejection.apnsID, timestamp: rejection.timestamp, durationMilliseconds: ms)
        case .failed(let failure):
            return TestPushAnswer(
                status: "failed", reason: failure.kind.rawValue, error: failure.message, durationMilliseconds: ms)
        }
    }

    /// A saved push replayed to a channel: one broadcast to the channel of the topic's bundle id.
    private func broadcast(_ r: TestPushRequest, channelID: String, configuration: APNsClientConfiguration) async
        -> TestPushAnswer
    {
        let (bundleID, _) = BroadcastRules.broadcastBundleID(forTopic: r.topic)
        let request = BroadcastRequest(
            bundleID: bundleID, channelID: channelID, priority: r.priority ?? 10, expiration: 0, payload: r.payload)
        let started = ContinuousClock.now
        do {
            let client = try APNsBroadcastClient(configuration: configuration)
            let answer = try await client.broadcast(request, to: r.endpoint)
            let elapsed = ContinuousClock.now - started
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            if answer.isSuccess {
                return TestPushAnswer(
                    status: "accepted", httpStatus: answer.status, apnsID: answer.requestID, durationMilliseconds: ms)
            }
            return TestPushAnswer(
                status: "rejected", httpStatus: answer.status, reason: answer.reason?.rawValue,
                apnsID: answer.requestID, durationMilliseconds: ms)
        } catch {
            return TestPushAnswer(status: "failed", reason: "client", error: ErrorWords.describe(error))
        }
    }
}
