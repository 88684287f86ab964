import Foundation
import KKPushCore

/// Rule 4: what the probe's answers say in the environment the push goes to.
extension Diagnoser {
    static func probeFindings(
        _ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?, tokenEnvironment: APNsEnvironment?
    )
        -> [Finding]
    {
        guard let probe = f.probe else { return [] }
        var out: [Finding] = []
        // Judge the answer where the push goes (else where the token is, else both).
        let targets: [APNsEnvironment] = [pushEnvironment ?? tokenEnvironment].compactMap { $0 }
        for env in targets.isEmpty ? APNsEnvironment.allCases : targets {
            out += findings(for: probe.answer(env), environment: env, facts: f, probe: probe)
        }
        // An environment the push does not go to, that gave no answer: if the judged environments did
        // not show they know the token, the token may belong there, so the path is unchecked.
        let judged = targets.isEmpty ? APNsEnvironment.allCases : targets
        let judgedKnows = judged.contains { knowledge(probe.answer($0)) == .knows }
        for env in APNsEnvironment.allCases where !judged.contains(env) {
            guard let inconclusive = inconclusiveFinding(probe.answer(env), environment: env, probe: probe) else {
                continue
            }
            if judgedKnows {
                out.append(
                    Finding(
                        .info, inconclusive.code, message: inconclusive.message,
                        why:
                            "Not this device's path (its pushes go to \(env.other), which answered); other builds' pushes are unchecked.",
                        fix: inconclusive.fix, confirmed: true))
            } else {
                out.append(
                    Finding(
                        .error, inconclusive.code, message: inconclusive.message,
                        why:
                            "\(env.other) does not show that it knows the token, and \(env) could not be asked: the probe cannot tell where the token belongs. What is said about routing comes from the configuration only (unconfirmed).",
                        fix: inconclusive.fix, confirmed: true))
            }
        }
        // A key or certificate good in one environment only: say so even when the push goes elsewhere.
        for env in APNsEnvironment.allCases where !targets.contains(env) && !targets.isEmpty {
            if case .rejected(_, let reason, _) = probe.answer(env),
                [.badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken, .badCertificateEnvironment].contains(reason)
            {
                out.append(
                    Finding(
                        .info,
                        reason == .badCertificateEnvironment
                            ? DiagnosisCode.certificateEnvironment : DiagnosisCode.keyEnvironment,
                        message: "\(env) answered \(reason.rawValue): the credential works in \(env.other) only.",
                        why:
                            "Not a problem for this device (its pushes go to \(env.other)); other builds' pushes would fail.",
                        fix: reason.fix))
            }
        }
        return out
    }

    /// The finding for a probe answer that says nothing (no answer, 429, 5xx), or nil for an answer.
    static func inconclusiveFinding(
        _ answer: DiagnosisFacts.ProbeAnswer, environment env: APNsEnvironment,
        probe: DiagnosisFacts.Probe
    ) -> Finding? {
        let where_ = "\(env) (\(probe.endpoint(env)))"
        let why =
            "The probe got no conclusive answer, so it cannot tell whether the token, topic and credential work there; what is said from the configuration is unconfirmed."
        switch answer {
        case .failed(let kind, let message) where !["tls", "http1"].contains(kind):
            let fix =
                kind == "timeout" || kind == "connection"
                ? "Check that \(probe.endpoint(env)) is reachable, then run the probe again; if port 443 is blocked, use Apple's alternative port 2197 (port); behind a proxy, tunnel through it, http://HOST:PORT (proxy)."
                : "Run the probe again; if it persists, check the network path to APNs: a push sent with the transfer's trace (verbose) shows where it stops (sendCommand)."
            return Finding(
                .error, DiagnosisCode.probeInconclusiveNetwork,
                message: "\(where_) could not be checked: no answer (\(kind): \(message)).", why: why, fix: fix,
                confirmed: true)
        case .rejected(let status, let reason, _)
        where [.tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown].contains(reason) || status == 429
            || status >= 500:
            return Finding(
                .error, DiagnosisCode.probeInconclusiveAPNs,
                message: "\(where_) could not be checked: APNs answered \(status) \(reason.rawValue).", why: why,
                fix: "Run the probe again in a few minutes (APNs is throttling or unavailable). \(reason.fix)",
                confirmed: true)
        default:
            return nil
        }
    }

    static func findings(
        for answer: DiagnosisFacts.ProbeAnswer, environment env: APNsEnvironment, facts f: DiagnosisFacts,
        probe: DiagnosisFacts.Probe
    ) -> [Finding] {
        if let inconclusive = inconclusiveFinding(answer, environment: env, probe: probe) { return [inconclusive] }
        let where_ = "\(env) (\(probe.endpoint(env)))"
        switch answer {
        case .accepted:
            return [
                Finding(
                    .info, .probeAccepted, message: "\(where_) accepted the probe.",
                    why: "The token, topic and credential work there.",
                    fix: "Nothing to fix on this path.", confirmed: true)
            ]
        case .failed(let kind, let message):
            var out: [Finding] = []
            if kind == "tls", let trust = probe.trust(env) { out += serverTrustFindings(trust, where: where_) }
            let fix: String
            switch kind {
            case "http1":
                fix =
                    "Something between you and APNs does not speak HTTP/2 (a TLS-inspecting proxy, a load balancer): APNs is HTTP/2 only. Let APNs traffic bypass it, or tunnel through it with HTTP CONNECT (proxy)."
            case "tls":
                fix =
                    "Check the CA: a stand-in's own CA file (caFile), Apple's roots are USERTrust/AAA; and that no proxy intercepts TLS."
            case "timeout", "connection":
                fix =
                    "Check that \(probe.endpoint(env)) is reachable; if port 443 is blocked, use Apple's alternative port 2197 (port); behind a proxy, tunnel through it, http://HOST:PORT (proxy)."
            default:
                fix =
                    "Retry; if it persists, check the network path to APNs: a push sent with the transfer's trace (verbose) shows where it stops (sendCommand)."
            }
            return out + [
                Finding(
                    .error, DiagnosisCode.connectivity, message: "\(where_): \(kind) failure: \(message)",
                    why: "The request never got an answer from APNs, so no push can be delivered on this path.",
                    fix: fix, confirmed: true)
            ]
        case .rejected(let status, let reason, let timestamp):
            let seen = "\(where_) answered \(status) \(reason.rawValue)"
            switch reason {
            case .unregistered, .expiredToken:
                let when = timestamp.map { " (no longer valid since \(iso($0)))" } ?? ""
                return [
                    Finding(
                        .error, DiagnosisCode.tokenUnregistered, message: "\(seen)\(when).",
                        why: "The app was removed, or notifications were turned off: APNs drops pushes to this token.",
                        fix:
                            "Stop sending to this token and clear it from the enrollment; the app sends a new token when it is opened again.",
                        confirmed: true)
                ]
            case .deviceTokenNotForTopic:
                return [
                    Finding(
                        .error, DiagnosisCode.tokenNotForTopic, message: "\(seen) for topic \(quote(f.topic)).",
                        why: "The token belongs to another app (another bundle id) than apns-topic.",
                        fix:
                            "Send it with the bundle id of the app that registered it (Kantine Koning: nl.kantinekoning.app).",
                        confirmed: true)
                ]
            case .expiredProviderToken:
                if probe.usedFreshProviderToken {
                    return [
                        Finding(
                            .error, DiagnosisCode.providerTokenClockSkew,
                            message:
                                "\(seen) to a provider token signed just now (iat = this machine's clock, \(iso(f.now))).",
                            why:
                                "APNs judges iat by its own clock: a clock far off makes every fresh token look expired (or from the future).",
                            fix:
                                "Synchronise this machine's clock (timedatectl set-ntp true; chronyc tracking), then retry.",
                            confirmed: true)
                    ]
                }
                return [
                    Finding(
                        .error, DiagnosisCode.providerTokenExpired, message: "\(seen).",
                        why:
                            "The provider token is more than an hour old: APNs rejects every push until a new one is used.",
                        fix: "Refresh the provider token every 20–60 minutes (the client's cache: 50 minutes).",
                        confirmed: true)
                ]
            case .invalidProviderToken:
                // The key ids, when they show why: that finding, confirmed (the mock, like APNs, finds no key for
                // a key id that is not the key's).
                if let key = f.key, let finding = keyIDFinding(key, ids: keyIDs(key), seen: seen) { return [finding] }
                return [
                    Finding(
                        .error, DiagnosisCode.keyInvalid, message: "\(seen).",
                        why:
                            "APNs cannot verify the provider token: the key id, the team id or the key itself is wrong.",
                        fix:
                            "Check the key id (AuthKey_<KEYID>.p8), the team id and that the .p8 is the key registered for that key id; decoding the provider token shows kid and iss (jwtDecodeCommand).",
                        confirmed: true)
                ]
            case .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
                return [
                    Finding(
                        .error, DiagnosisCode.keyEnvironment, message: "\(seen).",
                        why: "The key is restricted to \(env.other); \(env) rejects every token it signs.",
                        fix:
                            "Use a key enabled for \(env) (Certificates, Identifiers & Profiles → Keys → the key's environment), or a key for both.",
                        confirmed: true)
                ]
            case .badCertificateEnvironment:
                return [
                    Finding(
                        .error, DiagnosisCode.certificateEnvironment, message: "\(seen).",
                        why: "The client certificate is for \(env.other) only.",
                        fix:
                            "Use a \(env) or a universal (Sandbox & Production) certificate; inspecting the certificate shows which it is (certInspectCommand).",
                        confirmed: true)
                ]
            case .badCertificate:
                return [
                    Finding(
                        .error, DiagnosisCode.certificateInvalid, message: "\(seen).",
                        why: "APNs does not accept the client certificate.",
                        fix: "Create a new APNs certificate in the developer portal and export it with its key.",
                        confirmed: true)
                ]
            case .missingProviderToken:
                return [
                    Finding(
                        .error, DiagnosisCode.credentialsMissing, message: "\(seen).",
                        why: "Without a provider token or client certificate APNs rejects every push.",
                        fix:
                            "Give a signing key AuthKey_<KEYID>.p8 (key) with its key id (keyID) and team id (teamID), or a client certificate FILE.p12 (cert).",
                        confirmed: true)
                ]
            case .tooManyProviderTokenUpdates:
                return [
                    Finding(
                        .error, DiagnosisCode.providerTokenChurn, message: "\(seen).",
                        why: "The sender changes its provider token more often than every 20 minutes on a connection.",
                        fix:
                            "Reuse one provider token for 20–60 minutes, shared by all connections; never sign one per push.",
                        confirmed: true)
                ]
            case .badTopic, .topicDisallowed, .missingTopic:
                return [
                    Finding(
                        .error, DiagnosisCode.topicSuffix, message: "\(seen) for topic \(quote(f.topic)).",
                        why: "APNs does not accept this apns-topic for the push type or credential.", fix: reason.fix,
                        confirmed: true)
                ]
            case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown:
                return [
                    Finding(
                        .warning, DiagnosisCode.apnsUnavailable, message: "\(seen).",
                        why: "APNs is throttling or unavailable right now; the probe could not finish.",
                        fix: reason.fix, confirmed: true)
                ]
            case .badDeviceToken, .payloadEmpty, .payloadTooLarge:
                // BadDeviceToken is judged with the other environment's answer (routing);
                // PayloadEmpty is the probe's expected answer for a known token.
                return []
            default:
                return [
                    Finding(
                        .warning, .probeRejected, message: "\(seen): \(reason.explanation)",
                        why: "The probe request was rejected for a reason that does not say where the token belongs.",
                        fix: reason.fix,
                        confirmed: true)
                ]
            }
        }
    }

    /// What the server trust check says of a TLS failure: the missing root (or intermediate) and the fix, when the
    /// trust store refuses the chain; nothing when it accepts it or could not be made.
    public static func serverTrustFindings(_ trust: DiagnosisFacts.ServerTrust, where where_: String) -> [Finding] {
        guard !trust.trusted, trust.checkFailed == nil else { return [] }
        let missing =
            trust.missingCertificate.map {
                trust.missingIsRoot
                    ? "the root \"\($0)\" is not in \(trust.trustStore)"
                    : "the intermediate \"\($0)\" is neither sent nor in \(trust.trustStore)"
            } ?? "\(trust.trustStore) does not accept it (\(trust.problem ?? "verification failed"))"
        return [
            Finding(
                .error, DiagnosisCode.serverTrust,
                message: "\(where_): the server's certificate chain is not trusted here: \(missing).",
                why:
                    "The TLS handshake fails on certificate verification, so no request reaches APNs on this path; APNs serves its certificates under \"USERTrust RSA Certification Authority\" (sandbox and production, token and certificate connections alike).",
                fix: trust.fix ?? "Add the root the chain ends in to the trust store.", confirmed: true)
        ]
    }
}
