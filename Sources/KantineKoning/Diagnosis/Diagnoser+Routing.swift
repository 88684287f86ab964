import Foundation
import KKPushCore

/// Rule 3: routing, where the backend sends the push against where the token belongs.
extension Diagnoser {
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
                            "Re-enroll the device so the app sends its current token.",
                        confirmed: true))
            case (.knows, .knows):
                r.findings.append(
                    Finding(
                        .info, .probeInconclusive,
                        message: "Both environments accepted the token, so the probe cannot tell which it belongs to.",
                        why:
                            "A stand-in that accepts unknown tokens answers this way, as the mock does unless it is strict (strict); Apple does not.",
                        fix: "Run the mock strict (strict), or probe Apple's hosts."))
            default: break
            }
        }
        // The signed build is the next-best evidence after the probe: Apple sets aps-environment from the profile.
        let signed = signedEvidence(f)
        let signedToken = signed?.tokenEnvironment
        var fromSignedBuild = false
        if r.tokenEnvironment == nil, let signedToken {
            r.tokenEnvironment = signedToken
            fromSignedBuild = true
        }
        if let signed, let signedToken, confirmed, let probed = r.tokenEnvironment, probed != signedToken {
            r.findings.append(
                Finding(
                    .warning, .signedBuildNotThisToken,
                    message:
                        "The build given (\(signed.source)) is signed for aps-environment \(signed.apsEnvironment ?? "none"), but APNs knows this token in \(probed).",
                    why:
                        "A \(signedToken) build cannot have a \(probed) token: the phone runs another build than the one inspected.",
                    fix: "Inspect the build installed on that phone (the TestFlight or App Store version it runs)."))
        }
        if r.tokenEnvironment == nil { r.tokenEnvironment = resolution.deviceEnvironment }
        for p in signed?.problems ?? [] where p.severity != .info {
            r.findings.append(
                Finding(
                    p.severity, DiagnosisCode(p.code), message: "The build: \(p.message)",
                    why:
                        "What the signed build itself says; inspecting the build reads the same (buildInspectCommand).",
                    fix: p.fix))
        }

        let ignoredCodes: Set<Problem.Code> = [.forceEnvIgnored, .serverEnvIgnored]
        r.findings += resolution.warnings.filter { ignoredCodes.contains($0.code) }.map {
            Finding(
                .warning, DiagnosisCode($0.code), message: $0.message,
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
                    ? "The build is signed for aps-environment \(signed?.apsEnvironment ?? "none") (\(signed?.source ?? "")): its tokens are \(token) tokens."
                    : resolution.apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:)) != nil
                        ? "aps_environment \(quote(resolution.apsEnvironment)) (what the app is signed for) makes the token a \(token) token."
                        : EnvironmentModel.claim(buildEnvironment: buildValue, environment: token)
            let why =
                "APNs \(push) answers 400 BadDeviceToken to a \(token) token: the push never arrives (to the app it looks like an APNs timeout)."
            if let sent = f.sendEnvironment {
                r.findings.append(
                    Finding(
                        .error, DiagnosisCode.environmentMismatch,
                        message: "Pushes go to \(sent) (env). \(seen)", why: why,
                        fix:
                            "Send this token to \(token) (env), or let the backend resolve it from build_environment.",
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
                                "\(OverrideRemedy.unset(variable)) (auto-detection then sends this device to \(token)).",
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
                                "Clear is_test_user for this enrollment, or \(EnvironmentModel.installFix(for: .sandbox)).",
                            confirmed: confirmed))
                case .buildEnvironment, .fallback:
                    if !buildKnown {
                        // A near-miss ("Development") says what the app meant: the mismatch is the cause.
                        let nearMiss =
                            BuildEnvironment.judgement(of: buildValue)?.code == .buildEnvironmentNotNormalized
                        r.findings.append(
                            Finding(
                                .error,
                                nearMiss ? DiagnosisCode.environmentMismatch : DiagnosisCode.buildEnvironmentUnknown,
                                message:
                                    "build_environment \(quote(buildValue)) is not one the backend maps to sandbox, so it resolves to \(push). \(seen)",
                                why: why,
                                fix:
                                    "Make the app send \"\(token == .sandbox ? "development" : "production")\" for this build (getBuildEnvironment(); its ENABLE_LOGGING branch returns \"testing\"). \(fixForScheme)",
                                confirmed: confirmed))
                    } else if let signed, signedToken == token {
                        // Signed for one environment, reports the other: the configuration is not the distribution.
                        let distribution = signed.label
                        r.findings.append(
                            Finding(
                                .error, DiagnosisCode.signedBuildMismatch,
                                message:
                                    "Signed for \(signed.apsEnvironment ?? "none"), reports \(buildValue ?? ""): build_environment \(quote(buildValue)) sends the push to \(push), but \(distribution) is signed for aps-environment \(signed.apsEnvironment ?? "none") (\(signed.source)).\(confirmed ? " The probe agrees: APNs knows the token in \(token)." : "")",
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
                                    "The app reports the wrong build environment for how it is signed: it was built with the wrong scheme. \(fixForScheme)",
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
            !r.findings.contains(where: { $0.code == DiagnosisCode(j.code) && $0.severity == j.severity })
        {
            let why =
                buildValue == nil || !buildKnown
                ? "The backend compares build_environment exactly: only \"development\" and \"debug\" go to sandbox, everything else to production. Right for a production-signed build; the sandbox token of \(EnvironmentModel.builds(of: .sandbox)) gets BadDeviceToken."
                : "The backend understands it, but the app contract is \"development\" or \"production\"."
            let fix =
                j.severity == .error || buildValue == nil || !buildKnown
                ? "\(j.fix) Probe APNs (probe) to see where the token belongs." : j.fix
            r.findings.append(Finding(j.severity, DiagnosisCode(j.code), message: j.message, why: why, fix: fix))
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
                    fix: "\(OverrideRemedy.unset(variable)) (use auto-detection)."))
        }
        return r
    }
}
