import Foundation
import KKPushCore

/// Finds why a push does not arrive, from whatever ``DiagnosisFacts`` tell.
///
/// The rules, in the order they run (the verdict is ranked separately, by ``DiagnosisCode/ranking``):
/// 1. this machine: libcurl without HTTP/2 (`connectivity`);
/// 2. the device token: format as the backend stores it (`token-format`), missing (`token-missing`), the
///    enrollment revoked (`enrollment-revoked`);
/// 3. routing: where the backend sends the push (``EnvironmentResolver``, or `--env`) against where the
///    token belongs (the probe if it tells, else the `build_environment`): `server-env-override`,
///    `build-environment-unknown`, `environment-mismatch`;
/// 4. the probe's answers in the environment the push goes to: `token-unregistered`, `token-not-for-topic`,
///    `token-invalid` (neither environment knows the token), the credential reasons, `connectivity`;
/// 5. credentials: the key (`key-invalid`, `key-team-swapped`, `key-environment`), the certificate
///    (`certificate-expired`, `certificate-environment`, `certificate-topic`), a captured provider token
///    (`provider-token-expired`, `provider-token-clock-skew`, `provider-token-churn`);
/// 6. the request: its header values (`request-invalid`: push type, priority, expiration, collapse id), topic
///    suffix and push type (`topic-suffix`, `push-type-missing`, `push-type-auth`), and the payload
///    (`payload-invalid`), with the same call as the client's pre-flight (KKPushCore's `APNsRequestRules.check(_:authentication:judging:)`).
public enum Diagnoser {
    /// Diagnoses `facts`.
    public static func diagnose(_ facts: DiagnosisFacts) -> Diagnosis {
        var findings: [Finding] = []
        if !facts.localHTTP2 {
            findings.append(
                Finding(
                    .error, DiagnosisCode.connectivity,
                    message: "The libcurl on this machine has no HTTP/2 (nghttp2).",
                    why: "APNs speaks HTTP/2 only; without it no request reaches APNs.",
                    fix: "apt-get install libcurl4-openssl-dev libnghttp2-14 (check with `kkpush version`)."))
        }
        findings += tokenFindings(facts)
        let routing = routingFindings(facts)
        findings += routing.findings
        findings += probeFindings(
            facts, pushEnvironment: routing.pushEnvironment, tokenEnvironment: routing.tokenEnvironment)
        findings += keyFindings(facts, pushEnvironment: routing.pushEnvironment)
        findings += certificateFindings(facts, pushEnvironment: routing.pushEnvironment)
        findings += providerTokenFindings(facts)
        findings += requestFindings(facts)
        findings += facts.tokenUpdateProblems.filter { !coveredTokenUpdateCodes.contains($0.code) }.map {
            Finding(
                $0.severity, $0.code, message: "Token update: \($0.message)",
                why: "A token update the backend rejects leaves the enrollment with an old token, or none.", fix: $0.fix
            )
        }
        return Diagnosis(
            findings: findings, pushEnvironment: routing.pushEnvironment, tokenEnvironment: routing.tokenEnvironment)
    }

    /// Token-update problem codes that the rules here already judge (so they are not reported twice).
    static let coveredTokenUpdateCodes: Set<String> = [
        // the device token (judged by `tokenFindings` with the same DeviceToken rules)
        "BadDeviceToken", "MissingDeviceToken", "token-description-form", "token-normalized", "token-uppercase",
        // the build environment and the server's settings (judged by `routingFindings`)
        "build-environment-unknown", "build-environment-nonstandard", "build-environment-not-normalized",
        "build-environment-contradicts-token", "build-environment-testing", "build-environment-missing",
        "force-env-override", "server-env-override", "server-env-legacy", "force-env-ignored", "server-env-ignored",
        "test-user-production-build",
    ]

    // MARK: 2. The device token

    static func tokenFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        if let e = f.enrollment, e.status == .revoked {
            out.append(
                Finding(
                    .error, DiagnosisCode.enrollmentRevoked,
                    message: "The enrollment \(e.tenantSlug)/\(e.deviceID) is revoked.",
                    why: "The backend sends pushes to active enrollments only.",
                    fix:
                        "Re-enroll the device (scan the club's QR code again); if the hardware identifier changed (TestFlight ↔ App Store), that is expected."
                ))
        }
        guard let given = f.deviceToken else {
            if let e = f.enrollment {
                out.append(
                    Finding(
                        .error, DiagnosisCode.tokenMissing,
                        message: "The enrollment \(e.tenantSlug)/\(e.deviceID) has no apns_token.",
                        why:
                            "With no token the backend has nowhere to push (a token cleared after a 410, or never sent).",
                        fix:
                            "Open the app so it sends its token update (check notification permission); re-enroll if it stays empty."
                    ))
            }
            return out
        }
        let n = DeviceToken.normalize(given.value)
        guard let token = n.token else {
            let detail = n.problems.filter { $0.severity == .error }.map(\.message).joined(separator: " ")
            out.append(
                Finding(
                    .error, DiagnosisCode.tokenFormat,
                    message: "The device token from \(given.source.rawValue) is not usable: \(detail)",
                    why: "APNs answers 400 BadDeviceToken to a token that is not the app's hex token.",
                    fix:
                        "Send the token as lowercase hex of the raw bytes (deviceToken.map { String(format: \"%02x\", $0) }.joined()); re-enroll the device (README: \"Invalid device token\")."
                ))
            return out
        }
        if token != given.value {
            if given.source == .flag {
                out.append(
                    Finding(
                        .info, DiagnosisCode.tokenFormat,
                        message:
                            "The --token value was normalised to \(DeviceToken.redacted(token)) (\(n.problems.map(\.message).joined(separator: " "))).",
                        why: "kkpush sends the normalised form; a backend that stores the raw form would fail.",
                        fix: "Store and send the token as plain lowercase hex."))
            } else {
                out.append(
                    Finding(
                        .error, DiagnosisCode.tokenFormat,
                        message:
                            "The device token in \(given.source.rawValue) is \"\(String(given.value.prefix(24)))…\", not plain lowercase hex (\(n.problems.map(\.message).joined(separator: " "))).",
                        why:
                            "The backend puts the token into /3/device/<token> as stored; APNs answers BadDeviceToken.",
                        fix:
                            "Make the app send hex (deviceToken.map { String(format: \"%02x\", $0) }.joined(), not the description string), then re-enroll."
                    ))
            }
        }
        return out
    }

    // MARK: 3. Routing

    struct Routing {
        var findings: [Finding] = []
        var pushEnvironment: APNsEnvironment?
        var tokenEnvironment: APNsEnvironment?
    }

    /// What a probe answer says about whether that environment knows the token.
    enum Knowledge { case knows, doesNotKnow, cannotTell }

    static func knowledge(_ answer: DiagnosisFacts.ProbeAnswer) -> Knowledge {
        switch answer {
        case .accepted: return .knows
        case .failed: return .cannotTell
        case .rejected(let status, let reason, _):
            if reason == .badDeviceToken { return .doesNotKnow }
            if status == 410 { return .knows }
            // Checked after the device token (stage 5 → 6 in the shared order): the token passed.
            if [.payloadEmpty, .payloadTooLarge, .deviceTokenNotForTopic].contains(reason) { return .knows }
            return .cannotTell
        }
    }

    static func routingFindings(_ f: DiagnosisFacts) -> Routing {
        var r = Routing()
        let resolution = EnvironmentResolver.resolve(
            buildEnvironment: f.buildEnvironment, apsEnvironment: f.apsEnvironment, isTestUser: f.isTestUser,
            settings: f.settings)
        r.pushEnvironment = f.sendEnvironment ?? (f.knowsRouting ? resolution.environment : nil)

        var confirmed = false
        if let probe = f.probe {
            switch (knowledge(probe.sandbox), knowledge(probe.production)) {
            case (.knows, .doesNotKnow):
                r.tokenEnvironment = .sandbox
                confirmed = true
            case (.doesNotKnow, .knows):
                r.tokenEnvironment = .production
                confirmed = true
            case (.doesNotKnow, .doesNotKnow):
                r.findings.append(
                    Finding(
                        .error, DiagnosisCode.tokenInvalid,
                        message:
                            "Both environments answered BadDeviceToken (\(probe.sandboxEndpoint), \(probe.productionEndpoint)).",
                        why:
                            "The token is not a current token of this app in either environment: pushes to it fail everywhere.",
                        fix:
                            "Re-enroll the device so the app sends its current token (README: \"Invalid device token\").",
                        confirmed: true))
            case (.knows, .knows):
                r.findings.append(
                    Finding(
                        .info, "probe-inconclusive",
                        message: "Both environments accepted the token, so the probe cannot tell which it belongs to.",
                        why:
                            "A stand-in that accepts unknown tokens (the mock without --strict) answers this way; Apple does not.",
                        fix: "Run the mock with --strict, or probe Apple's hosts."))
            default: break
            }
        }
        // The signed build is the next-best evidence after the probe: Apple sets aps-environment from the profile.
        let signed = f.signedBuild
        let signedToken = signed?.tokenEnvironment
        var fromSignedBuild = false
        if r.tokenEnvironment == nil, let signedToken {
            r.tokenEnvironment = signedToken
            fromSignedBuild = true
        }
        if let signed, let signedToken, confirmed, let probed = r.tokenEnvironment, probed != signedToken {
            r.findings.append(
                Finding(
                    .warning, "signed-build-not-this-token",
                    message:
                        "The build given (\(signed.source)) is signed for aps-environment \(signed.apsEnvironment), but APNs knows this token in \(probed).",
                    why:
                        "A \(signedToken) build cannot have a \(probed) token: the phone runs another build than the one inspected.",
                    fix: "Inspect the build installed on that phone (the TestFlight or App Store version it runs)."))
        }
        if r.tokenEnvironment == nil { r.tokenEnvironment = resolution.deviceEnvironment }
        for p in signed?.problems ?? [] where p.severity != .info {
            r.findings.append(
                Finding(
                    p.severity, p.code, message: "The build: \(p.message)",
                    why: "What the signed build itself says (kkpush build inspect reads the same).", fix: p.fix))
        }

        let ignoredCodes: Set<String> = ["force-env-ignored", "server-env-ignored"]
        r.findings += resolution.warnings.filter { ignoredCodes.contains($0.code) }.map {
            Finding(
                .warning, $0.code, message: $0.message,
                why:
                    "The server ignores the value, so auto-detection decides; whoever set it probably meant otherwise.",
                fix: $0.fix)
        }

        guard let push = r.pushEnvironment else { return r }
        let buildValue = f.buildEnvironment
        let buildKnown = buildValue.map { EnvironmentResolver.deviceEnvironment(for: $0) != nil } ?? false
        let fixForScheme =
            "Make the app send what it is signed for: aps_environment read from its embedded profile (the KantineKoningSigning module), which the backend prefers to build_environment. Until then, archive TestFlight, ad hoc and enterprise builds with the Release scheme (they are signed for production, so build_environment must say \"production\"), and use Release Testing only for builds run from Xcode."

        if let token = r.tokenEnvironment, token != push {
            let seen =
                confirmed
                ? "The probe found the token in \(token) (\(f.probe?.endpoint(token) ?? token.host)); the other environment answered BadDeviceToken."
                : fromSignedBuild
                    ? "The build is signed for aps-environment \(signed?.apsEnvironment ?? "") (\(signed?.source ?? "")): its tokens are \(token) tokens."
                    : resolution.apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:)) != nil
                        ? "aps_environment \(quote(resolution.apsEnvironment)) (what the app is signed for) makes the token a \(token) token."
                        : "build_environment \(quote(buildValue)) makes the token a \(token) token."
            let why =
                "APNs \(push) answers 400 BadDeviceToken to a \(token) token: the push never arrives (the README's \"APNS timeouts\")."
            if let sent = f.sendEnvironment {
                r.findings.append(
                    Finding(
                        .error, DiagnosisCode.environmentMismatch,
                        message: "Pushes go to \(sent) (--env). \(seen)", why: why,
                        fix:
                            "Send this token to \(token): --env \(token) (or let the backend resolve it from build_environment).",
                        confirmed: confirmed))
            } else {
                switch resolution.decidedBy {
                case .forceEnv, .legacyAPNSEnv:
                    let variable = resolution.decidedBy.rawValue
                    let value =
                        resolution.decidedBy == .forceEnv ? f.settings.forceEnv ?? "" : f.settings.legacyAPNSEnv ?? ""
                    r.findings.append(
                        Finding(
                            .error, DiagnosisCode.serverEnvOverride,
                            message: "The server sets \(variable)=\(value), so every push goes to \(push). \(seen)",
                            why: why,
                            fix:
                                "fly secrets unset \(variable) -a kantine-koning (auto-detection then sends this device to \(token)).",
                            confirmed: confirmed))
                case .apsEnvironment:
                    r.findings.append(
                        Finding(
                            .error, DiagnosisCode.environmentMismatch,
                            message:
                                "aps_environment \(quote(resolution.apsEnvironment)) sends the push to \(push). \(seen)",
                            why: why,
                            fix:
                                "The app's aps_environment is not what it is signed with: read it from the embedded profile's aps-environment entitlement (the KantineKoningSigning module), never from the build configuration.",
                            confirmed: confirmed))
                case .testUser:
                    r.findings.append(
                        Finding(
                            .error, DiagnosisCode.environmentMismatch,
                            message: "The enrollment is a test user, so the backend pushes to sandbox. \(seen)",
                            why: why,
                            fix:
                                "Clear is_test_user for this enrollment, or install a Release Testing build on the device.",
                            confirmed: confirmed))
                case .buildEnvironment, .fallback:
                    if !buildKnown {
                        // A near-miss ("Development") says what the app meant: the mismatch is the cause.
                        let nearMiss =
                            BuildEnvironment.judgement(of: buildValue)?.code == "build-environment-not-normalized"
                        r.findings.append(
                            Finding(
                                .error,
                                nearMiss ? DiagnosisCode.environmentMismatch : DiagnosisCode.buildEnvironmentUnknown,
                                message:
                                    "build_environment \(quote(buildValue)) is not one the backend maps to sandbox, so it resolves to \(push). \(seen)",
                                why: why,
                                fix:
                                    "Make the app send \"\(token == .sandbox ? "development" : "production")\" for this build (getBuildEnvironment(); the README's ENABLE_LOGGING branch returns \"testing\"). \(fixForScheme)",
                                confirmed: confirmed))
                    } else if let signed, signedToken == token {
                        // Signed for one environment, reports the other: the configuration is not the distribution.
                        let distribution = signed.label
                        r.findings.append(
                            Finding(
                                .error, DiagnosisCode.signedBuildMismatch,
                                message:
                                    "Signed for \(signed.apsEnvironment), reports \(buildValue ?? ""): build_environment \(quote(buildValue)) sends the push to \(push), but \(distribution) is signed for aps-environment \(signed.apsEnvironment) (\(signed.source)).\(confirmed ? " The probe agrees: APNs knows the token in \(token)." : "")",
                                why:
                                    "Apple sets aps-environment from the provisioning profile, not from the build configuration: the app's #if DEBUG says \(quote(buildValue)), its tokens are \(token) tokens, and APNs \(push) answers 400 BadDeviceToken to them.",
                                fix:
                                    "On the app's side: send aps_environment read from the embedded profile (the KantineKoningSigning module: SignedEnvironmentReader.current().tokenUpdateValue) with every token update; the backend prefers it to build_environment. Until that ships, \(token == .production ? "archive TestFlight, ad hoc and enterprise builds with the Release scheme" : "run builds from Xcode with the Release Testing scheme").",
                                confirmed: confirmed))
                    } else {
                        r.findings.append(
                            Finding(
                                .error, DiagnosisCode.environmentMismatch,
                                message: "build_environment \(quote(buildValue)) sends the push to \(push). \(seen)",
                                why: why,
                                fix:
                                    "The app reports the wrong build environment for how it is signed (README: \"Wrong build scheme\"). \(fixForScheme)",
                                confirmed: confirmed))
                    }
                }
            }
        }
        // The value on its own, judged by the rule `env resolve` and `token verify` apply too: a verdict only
        // for a value outside the contract; near-misses ("Development"), `testing` and a missing value are
        // warnings, as there; the probe (or the enrollment's token) tells whether the push lands.
        let judged = buildValue != nil || ((f.enrollment != nil || f.tokenUpdate != nil) && f.sendEnvironment == nil)
        if judged, let j = BuildEnvironment.judgement(of: buildValue),
            !r.findings.contains(where: { $0.code == j.code && $0.severity == j.severity })
        {
            let why =
                buildValue == nil || !buildKnown
                ? "The backend compares build_environment exactly: only \"development\" and \"debug\" go to sandbox, everything else to production. Right for a Release build; a Release Testing build's sandbox token gets BadDeviceToken."
                : "The backend understands it, but the app contract is \"development\" or \"production\"."
            let fix =
                j.severity == .error || buildValue == nil || !buildKnown
                ? "\(j.fix) Run with --probe to see where the token belongs." : j.fix
            r.findings.append(Finding(j.severity, j.code, message: j.message, why: why, fix: fix))
        }

        if resolution.decidedBy == .forceEnv || resolution.decidedBy == .legacyAPNSEnv,
            r.tokenEnvironment == nil || r.tokenEnvironment == push
        {
            let variable = resolution.decidedBy.rawValue
            r.findings.append(
                Finding(
                    .warning, DiagnosisCode.serverEnvOverride,
                    message: "The server sets \(variable), which sends every device to \(push), whatever its build.",
                    why: "Right for this device, but every \(push.other) build's pushes get BadDeviceToken.",
                    fix: "fly secrets unset \(variable) -a kantine-koning (use auto-detection)."))
        }
        return r
    }

    // MARK: 4. The probe

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
                ? "Check that \(probe.endpoint(env)) is reachable, then run the probe again; if port 443 is blocked, use Apple's alternative port 2197 (--port 2197); behind a proxy, pass --proxy http://HOST:PORT."
                : "Run the probe again; if it persists, check the network path to APNs (--verbose on kkpush send)."
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
                    .info, "probe-accepted", message: "\(where_) accepted the probe.",
                    why: "The token, topic and credential work there.",
                    fix: "Nothing to fix on this path.", confirmed: true)
            ]
        case .failed(let kind, let message):
            let fix: String
            switch kind {
            case "http1":
                fix =
                    "Something between you and APNs does not speak HTTP/2 (a TLS-inspecting proxy, a load balancer): APNs is HTTP/2 only. Let APNs traffic bypass it, or tunnel through it with --proxy (HTTP CONNECT)."
            case "tls":
                fix =
                    "Check the CA (--ca-file for a stand-in; Apple's roots are USERTrust/AAA) and that no proxy intercepts TLS."
            case "timeout", "connection":
                fix =
                    "Check that \(probe.endpoint(env)) is reachable; if port 443 is blocked, use Apple's alternative port 2197 (--port 2197); behind a proxy, pass --proxy http://HOST:PORT."
            default:
                fix = "Retry; if it persists, run with --verbose and check the network path to APNs."
            }
            return [
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
                                "\(seen) to a provider token kkpush signed just now (iat = this machine's clock, \(iso(f.now))).",
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
                        fix: "Refresh the provider token every 20–60 minutes (kkpush's cache: 50 minutes).",
                        confirmed: true)
                ]
            case .invalidProviderToken:
                let swapped = f.key.map { !$0.swapProblems.isEmpty || $0.keyID == $0.teamID } ?? false
                return [
                    Finding(
                        .error, swapped ? DiagnosisCode.keyTeamSwapped : DiagnosisCode.keyInvalid, message: "\(seen).",
                        why:
                            "APNs cannot verify the provider token: the key id, the team id or the key itself is wrong.",
                        fix: swapped
                            ? "Swap --key-id and --team-id: the key id is in the file name AuthKey_<KEYID>.p8, the team id in the developer account's Membership page."
                            : "Check the key id (AuthKey_<KEYID>.p8), the team id and that the .p8 is the key registered for that key id; `kkpush jwt decode` shows kid and iss.",
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
                            "Use a \(env) or a universal (Sandbox & Production) certificate; `kkpush cert inspect` shows which it is.",
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
                        fix: "Give --key AuthKey_<KEYID>.p8 --key-id KEYID --team-id TEAMID, or --cert FILE.p12.",
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
                        .warning, "probe-rejected", message: "\(seen): \(reason.explanation)",
                        why: "The probe request was rejected for a reason that does not say where the token belongs.",
                        fix: reason.fix,
                        confirmed: true)
                ]
            }
        }
    }

    // MARK: 5. Credentials

    static func keyFindings(_ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?) -> [Finding] {
        guard let key = f.key else { return [] }
        var out: [Finding] = []
        if let error = key.loadError {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The provider key \(quote(key.file)) cannot be used: \(error)",
                    why: "Without a loadable P-256 key no valid provider token can be signed.",
                    fix:
                        "Download the .p8 again from the developer portal (Keys); it must be an unencrypted PKCS#8 P-256 key."
                ))
        }
        for (name, value) in [("key id", key.keyID), ("team id", key.teamID)] where !isAppleID(value) {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The \(name) \(quote(value)) is not 10 letters and digits.",
                    why: "APNs answers InvalidProviderToken to a token whose kid or iss is not an Apple id.",
                    fix:
                        "The key id is the 10 characters in AuthKey_<KEYID>.p8; the team id is on the developer account's Membership page."
                ))
        }
        for p in key.swapProblems {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyTeamSwapped, message: p.message,
                    why: "A token with the key id and team id swapped is rejected with InvalidProviderToken.",
                    fix: p.fix))
        }
        if let only = key.environmentRestriction, let push = pushEnvironment, only != push {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyEnvironment,
                    message: "The key \(key.keyID) is restricted to \(only), but pushes go to \(push).",
                    why:
                        "APNs \(push) answers 403 BadEnvironmentKeyIdInToken to tokens signed with a \(only)-only key.",
                    fix: "Use a key enabled for \(push) (or for both) for these pushes."))
        }
        return out
    }

    static func certificateFindings(_ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?) -> [Finding] {
        guard let cert = f.certificate else { return [] }
        if let error = cert.loadError {
            return [
                Finding(
                    .error, DiagnosisCode.certificateInvalid,
                    message: "The certificate \(quote(cert.file)) cannot be used: \(error)",
                    why: "Without a loadable certificate and key, the TLS handshake with APNs fails.",
                    fix:
                        "Export the certificate with its private key as .p12 (Keychain Access), and give --cert-password."
                )
            ]
        }
        var out: [Finding] = []
        if let notAfter = cert.notAfter {
            if notAfter < f.now {
                out.append(
                    Finding(
                        .error, DiagnosisCode.certificateExpired,
                        message: "The certificate \(quote(cert.file)) expired on \(iso(notAfter)).",
                        why: "APNs refuses expired client certificates: every push fails.",
                        fix:
                            "Create a new APNs certificate in the developer portal (or move to a .p8 key, which does not expire)."
                    ))
            } else if notAfter.timeIntervalSince(f.now) < 30 * 86400 {
                out.append(
                    Finding(
                        .warning, "certificate-expiring",
                        message: "The certificate \(quote(cert.file)) expires on \(iso(notAfter)).",
                        why: "Within 30 days every push will fail.", fix: "Renew it now (or move to a .p8 key)."))
            }
        }
        if let push = pushEnvironment, !cert.environments.isEmpty, !cert.environments.contains(push) {
            out.append(
                Finding(
                    .error, DiagnosisCode.certificateEnvironment,
                    message:
                        "The certificate is for \(cert.environments.map(\.rawValue).joined(separator: " and ")), but pushes go to \(push).",
                    why: "APNs \(push) answers BadCertificateEnvironment (or closes the connection with it).",
                    fix: "Use a \(push) or a universal (Sandbox & Production) certificate."))
        }
        if let topic = f.topic, !topic.isEmpty {
            var covered = Set(cert.topics)
            if let b = cert.bundleID { covered.formUnion([b, b + ".voip", b + ".complication"]) }
            if !covered.isEmpty, !covered.contains(topic) {
                out.append(
                    Finding(
                        .error, DiagnosisCode.certificateTopic,
                        message:
                            "The certificate covers \(covered.sorted().joined(separator: ", ")), not the topic \(quote(topic)).",
                        why: "APNs rejects topics the certificate does not cover (BadTopic / TopicDisallowed).",
                        fix: "Use the certificate of the app you push to, or push to one of its topics."))
            }
        }
        return out
    }

    static func providerTokenFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        if let t = f.providerToken {
            if let reason = t.invalidReason {
                out.append(
                    Finding(
                        .error, DiagnosisCode.keyInvalid, message: "The provider token does not verify: \(reason)",
                        why: "APNs answers InvalidProviderToken.",
                        fix: "Sign it with the .p8 of its key id (kkpush jwt sign), ES256, raw or DER signature."))
            }
            if let kid = t.kid, let key = f.key, kid != key.keyID {
                let swapped = kid == key.teamID
                out.append(
                    Finding(
                        .error, swapped ? DiagnosisCode.keyTeamSwapped : DiagnosisCode.keyInvalid,
                        message: "The provider token's kid is \(quote(kid)), but the key id is \(quote(key.keyID)).",
                        why: "APNs looks the key up by kid: InvalidProviderToken.",
                        fix: swapped
                            ? "The sender swaps key id and team id: kid must be the key id, iss the team id."
                            : "Sign with the key id of the .p8 used."))
            } else if let kid = t.kid, let iss = t.iss, f.key == nil, looksLikeSwap(kid: kid, iss: iss) {
                out.append(
                    Finding(
                        .warning, DiagnosisCode.keyTeamSwapped,
                        message: "The provider token's kid \(quote(kid)) and iss \(quote(iss)) look swapped.",
                        why: "If they are, APNs answers InvalidProviderToken.",
                        fix: "kid is the key id (AuthKey_<KEYID>.p8), iss the team id."))
            }
            if t.iatNotInteger {
                out.append(
                    Finding(
                        .warning, "provider-token-iat-format", message: "The provider token's iat is not an integer.",
                        why: "APNs expects whole seconds since 1970; whether it accepts a string is unconfirmed.",
                        fix: "Send iat as a JSON integer (seconds)."))
            }
            if let iat = t.issuedAt {
                let age = f.now.timeIntervalSince(iat)
                if age < -60 {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.providerTokenClockSkew,
                            message:
                                "The provider token was issued at \(iso(iat)), \(InputNumbers.text((-age).rounded(.towardZero))) s in the future of this machine's clock.",
                            why:
                                "The sender's clock is ahead: APNs rejects tokens from the future (InvalidProviderToken) and expires them early or late.",
                            fix: "Synchronise the sender's clock (NTP: timedatectl set-ntp true)."))
                } else if age > 3600 {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.providerTokenExpired,
                            message:
                                "The provider token was issued at \(iso(iat)), \(InputNumbers.text((age / 60).rounded(.towardZero))) minutes ago.",
                            why: "APNs rejects provider tokens older than one hour with ExpiredProviderToken.",
                            fix: "Refresh the token every 20–60 minutes (and after ExpiredProviderToken, once)."))
                }
            }
        }
        if let interval = f.providerTokenRefreshInterval {
            if interval < 20 * 60 {
                out.append(
                    Finding(
                        .error, DiagnosisCode.providerTokenChurn,
                        message:
                            "The sender makes a new provider token every \(InputNumbers.text(interval.rounded(.towardZero))) s.",
                        why:
                            "APNs answers 429 TooManyProviderTokenUpdates when a connection's token changes more often than every 20 minutes.",
                        fix: "Reuse one token for 20–60 minutes, shared by all connections."))
            } else if interval > 60 * 60 {
                out.append(
                    Finding(
                        .error, DiagnosisCode.providerTokenExpired,
                        message:
                            "The sender refreshes its provider token every \(InputNumbers.text((interval / 60).rounded(.towardZero))) minutes.",
                        why: "Tokens older than one hour get ExpiredProviderToken.",
                        fix: "Refresh at most every 60 minutes (40–55 is safe)."))
            }
        }
        return out
    }

    // MARK: 6. The request

    static func requestFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        let pushType: PushType? = f.pushType.flatMap { $0.isEmpty ? nil : PushType($0) }
        if let raw = f.pushType, raw.isEmpty {
            out.append(
                Finding(
                    .error, DiagnosisCode.pushTypeMissing, message: "The sender sends no apns-push-type.",
                    why:
                        "APNs requires it on watchOS and iOS 13+ may delay or drop pushes without it (background pushes especially).",
                    fix:
                        "Send apns-push-type: background for content-available pushes (priority 5), alert for visible ones."
                ))
        }
        // The request as far as it is known, judged by the same call as the client's pre-flight (and so
        // `kkpush send` and the mock): header values always, the topic when given, the payload when given.
        // The device token is judged above (`tokenFindings`), with where it came from.
        let topic = f.topic.flatMap { $0.isEmpty ? nil : $0 }
        var known: APNsRequestRules.KnownParts = []
        if topic != nil { known.insert(.topic) }
        if f.payload != nil { known.insert(.payload) }
        let request = NotificationRequest(
            deviceToken: "", topic: topic, pushType: pushType, priority: f.priority, expiration: f.expiration,
            collapseID: f.collapseID, payload: f.payload ?? [])
        let usingCertificate = f.certificate != nil && f.key == nil
        let check = APNsRequestRules.check(
            request, authentication: usingCertificate ? .certificate(topics: nil) : .token, judging: known)
        let topicCodes: Set<String> = [APNsReason.badTopic.rawValue, APNsReason.missingTopic.rawValue]
        for p in check.problems where p.code != "push-type-missing" {
            guard p.severity == .error else {
                out.append(
                    Finding(
                        p.severity, p.code, message: p.message,
                        why: "APNs accepts it, but the device may not act on it.", fix: p.fix))
                continue
            }
            let code: String
            if topicCodes.contains(p.code) {
                let tokenOnly = pushType?.requiresTokenAuth == true && p.message.contains("provider-token")
                code = tokenOnly ? DiagnosisCode.pushTypeAuth : DiagnosisCode.topicSuffix
            } else if isHeaderReason(p.code) {
                code = DiagnosisCode.requestInvalid
            } else {
                code = DiagnosisCode.payloadInvalid
            }
            out.append(
                Finding(
                    .error, code, message: p.message,
                    why: "APNs answers \(APNsRejection(APNsReason(p.code))) to this request.",
                    fix: p.fix))
        }
        if let topic, let bundle = f.tokenUpdate?.bundleID, baseBundleID(of: topic) != bundle {
            out.append(
                Finding(
                    .error, DiagnosisCode.tokenNotForTopic,
                    message:
                        "The token update says the token is for \(quote(bundle)), but pushes use topic \(quote(topic)).",
                    why: "APNs answers 400 DeviceTokenNotForTopic when the token's app is not the topic's.",
                    fix: "Push with apns-topic \(bundle) (plus the push type's suffix)."))
        }
        return out
    }

    /// True for the stage-2 reasons: a header value APNs refuses.
    static func isHeaderReason(_ code: String) -> Bool {
        [APNsReason.badMessageId, .badPriority, .badExpirationDate, .badCollapseId, .invalidPushType]
            .map(\.rawValue).contains(code)
    }

    // MARK: Helpers

    /// The bundle id of a topic: the topic without a push type's suffix.
    static func baseBundleID(of topic: String) -> String {
        PushType.implied(byTopic: topic)?.bundleID(fromTopic: topic) ?? topic
    }

    static func isAppleID(_ s: String) -> Bool {
        s.count == 10 && s.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
    }

    static func looksLikeSwap(kid: String, iss: String) -> Bool { kid == iss }

    static func quote(_ s: String?) -> String { s.map { "\"\($0)\"" } ?? "(none)" }

    static func iso(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }
}
