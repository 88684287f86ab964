import Foundation
import KKPushAuth
package import KKPushClient
package import KKPushCore
import KKPushTrust
package import KantineKoning

/// `diagnose --probe`: the least intrusive request the spec allows, sent to both environments.
///
/// The request has an **empty payload**, `apns-push-type: background`, priority 5 and expiration 0.
/// APNs checks the device token before the payload (the order the mock documents and Pushy's mock
/// follows; Apple does not state it), so an environment that knows the token answers `400 PayloadEmpty`
/// and delivers nothing, while one that does not answers `400 BadDeviceToken`. If both answer
/// `PayloadEmpty` (a server that checks the payload first), the probe falls back to a silent
/// background push `{"aps":{}}` with expiration 0: nothing is shown and the app is not woken.
package enum DiagnosisProbe {
    package struct Inputs {
        package var token: String
        package var topic: String
        package var credential: APNsCredential
        package var sandbox: APNsEndpoint
        package var production: APNsEndpoint
        package var proxy: String?
        package var timeout: Duration

        package init(
            token: String, topic: String, credential: APNsCredential, sandbox: APNsEndpoint, production: APNsEndpoint,
            proxy: String?, timeout: Duration
        ) {
            self.token = token
            self.topic = topic
            self.credential = credential
            self.sandbox = sandbox
            self.production = production
            self.proxy = proxy
            self.timeout = timeout
        }
    }

    package static func run(_ inputs: Inputs) async throws -> DiagnosisFacts.Probe {
        let client = try makeClient(
            credential: inputs.credential, sandbox: inputs.sandbox, production: inputs.production,
            proxy: inputs.proxy, timeout: inputs.timeout)
        defer { Task { await client.shutdown() } }
        let (sandbox, production) = await ask(client, token: inputs.token, topic: inputs.topic, silentFallback: true)
        await client.shutdown()
        let seconds = max(1, Int(inputs.timeout.components.seconds))
        return DiagnosisFacts.Probe(
            sandbox: sandbox, production: production, sandboxEndpoint: "\(inputs.sandbox.host):\(inputs.sandbox.port)",
            productionEndpoint: "\(inputs.production.host):\(inputs.production.port)",
            usedFreshProviderToken: inputs.credential.isToken,
            sandboxTrust: await trust(after: sandbox, endpoint: inputs.sandbox, timeout: seconds),
            productionTrust: await trust(after: production, endpoint: inputs.production, timeout: seconds))
    }

    /// After a probe that failed in TLS, the server trust check of `endpoint` against the trust store the client
    /// used (the endpoint's CA file, else the system bundle); nil for any other answer.
    package static func trust(
        after answer: DiagnosisFacts.ProbeAnswer, endpoint: APNsEndpoint, timeout: Int
    ) async -> DiagnosisFacts.ServerTrust? {
        guard case .failed(kind: "tls", _) = answer else { return nil }
        let anchors: ServerTrustCheck.Anchors = endpoint.caFile.map { .caFile($0) } ?? .system
        do {
            let report = try await ServerTrustCheck.runOffThread(
                host: endpoint.host, port: endpoint.port, anchors: anchors, timeout: timeout)
            return DiagnosisFacts.ServerTrust(
                trustStore: report.anchors.description, trusted: report.verdict == .trusted,
                problem: report.problem,
                // An issuer the chain does not show to be a root or an intermediate is not named as either: the
                // finding then gives the check's problem, which says it may be either.
                missingCertificate: report.missingKind == .issuer
                    ? nil : report.missingIssuerCommonName ?? report.missingIssuer,
                missingIsRoot: report.missingIsRoot, fix: report.fix)
        } catch {
            return DiagnosisFacts.ServerTrust(
                trustStore: endpoint.caFile ?? "the system CA bundle", trusted: false,
                checkFailed: (error as? KKPushError)?.message ?? "\(error)")
        }
    }

    /// A client for probing: one connection per environment (reused by every probe through it), at most
    /// `concurrency` requests in flight on each, no retries, no pre-flight (the empty payload is the point).
    package static func makeClient(
        credential: APNsCredential, sandbox: APNsEndpoint, production: APNsEndpoint, proxy: String?,
        timeout: Duration, concurrency: Int = 1
    ) throws -> APNsClient {
        let config = APNsClientConfiguration(
            credential: credential, sandboxEndpoint: sandbox, productionEndpoint: production,
            connectTimeout: timeout, requestTimeout: timeout, maxInFlightPerConnection: concurrency,
            maxConnections: 1, proxyURL: proxy, retry: .none, preflight: false)
        return try APNsClient(configuration: config)
    }

    /// Probes one token in both environments at once through `client`. With `silentFallback`, when both
    /// answer PayloadEmpty the silent background push is tried (diagnose); without it (audit) nothing but the
    /// empty payload is ever sent.
    package static func ask(_ client: APNsClient, token: String, topic: String, silentFallback: Bool) async -> (
        sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer
    ) {
        func request(payload: [UInt8]) -> NotificationRequest {
            NotificationRequest(
                deviceToken: token, topic: topic, pushType: .background, priority: 5, expiration: 0,
                payload: payload)
        }
        async let s = client.send(request(payload: []), environment: .sandbox)
        async let p = client.send(request(payload: []), environment: .production)
        var (sandbox, production) = await (answer(s), answer(p))
        let emptyBoth = [sandbox, production].allSatisfy {
            if case .rejected(_, let reason, _) = $0 { return reason == .payloadEmpty }
            return false
        }
        if silentFallback, emptyBoth {
            let silent = Array(#"{"aps":{}}"#.utf8)
            async let s2 = client.send(request(payload: silent), environment: .sandbox)
            async let p2 = client.send(request(payload: silent), environment: .production)
            (sandbox, production) = await (answer(s2), answer(p2))
        }
        return (sandbox, production)
    }

    package static func answer(_ outcome: PushOutcome) -> DiagnosisFacts.ProbeAnswer {
        switch outcome.result {
        case .accepted: return .accepted
        case .rejected(let r): return .rejected(status: r.status, reason: r.reason, timestamp: r.timestamp)
        case .failed(let f): return .failed(kind: f.kind.rawValue, message: f.message)
        }
    }
}
