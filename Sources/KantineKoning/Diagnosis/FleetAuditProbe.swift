import Foundation
public import KKPushCore

extension FleetAuditCode {
    /// `audit --probe`: an environment answered 410 (Unregistered / ExpiredToken): the app is gone from the device.
    public static let tokenUnregistered = "token-unregistered"
    /// `audit --probe`: only the environment the backend does not send the enrollment to knows the token.
    public static let tokenWrongEnvironment = "token-wrong-environment"
    /// `audit --probe`: both environments answered BadDeviceToken (a foreign or garbage token).
    public static let tokenUnknown = "token-unknown"
    /// `audit --probe`: no conclusive answer for the environment that decides (a timeout, 429, 5xx, ...).
    public static let probeInconclusive = "probe-inconclusive"
}

/// What `audit --probe` concludes from one token's two answers (diagnose's probe, both environments), for
/// an enrollment the backend sends to `push`.
public enum FleetProbeVerdict: Sendable, Equatable {
    /// The environment the backend sends to knows the token.
    case healthy
    /// An environment answered 410.
    case unregistered(APNsEnvironment)
    /// Only the other environment knows the token.
    case wrongEnvironment(known: APNsEnvironment)
    /// Both environments answered BadDeviceToken.
    case unknown
    /// No conclusive answer from the environment that decides (or from the other one when it would decide).
    case inconclusive

    /// Judges the two answers (a token known in the push environment is healthy whatever the other says; 410
    /// anywhere wins; never a guess from a timeout, 429 or 5xx).
    public static func judge(
        sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer, push: APNsEnvironment
    ) -> FleetProbeVerdict {
        func gone(_ a: DiagnosisFacts.ProbeAnswer) -> Bool {
            if case .rejected(let status, _, _) = a { return status == 410 }
            return false
        }
        if gone(sandbox) { return .unregistered(.sandbox) }
        if gone(production) { return .unregistered(.production) }
        let other: APNsEnvironment = push == .sandbox ? .production : .sandbox
        let here = Diagnoser.knowledge(push == .sandbox ? sandbox : production)
        let there = Diagnoser.knowledge(push == .sandbox ? production : sandbox)
        switch (here, there) {
        case (.knows, _): return .healthy
        case (.doesNotKnow, .knows): return .wrongEnvironment(known: other)
        case (.doesNotKnow, .doesNotKnow): return .unknown
        default: return .inconclusive
        }
    }

    /// True if the answer settles nothing (a failure, 429, 5xx, a credential error): probed again on a resume.
    public static func isConclusive(_ a: DiagnosisFacts.ProbeAnswer) -> Bool {
        if case .rejected(let status, _, _) = a, status == 410 { return true }
        return Diagnoser.knowledge(a) != .cannotTell
    }
}

extension FleetAudit {
    /// `--probe`: the findings of one probed token on the active enrollments holding it (each judged against
    /// where the backend sends it under the server's settings), after the `tenant` and `codes` filters.
    public mutating func probeFindings(
        _ holders: [Enrollment], sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer
    ) -> [FleetAuditFinding] {
        var found: [FleetAuditFinding] = []
        func describe(_ a: DiagnosisFacts.ProbeAnswer) -> String {
            switch a {
            case .accepted: return "200"
            case .rejected(let status, let reason, _): return "\(status) \(reason.rawValue)"
            case .failed(let kind, _): return "failed (\(kind))"
            }
        }
        let answers = "sandbox answered \(describe(sandbox)), production \(describe(production))"
        // Where APNs knows the token (one environment knows it, the other answers BadDeviceToken): proved, and it
        // replaces what the enrollment's fields inferred in the routing table.
        let proved: APNsEnvironment? =
            switch (Diagnoser.knowledge(sandbox), Diagnoser.knowledge(production)) {
            case (.knows, .doesNotKnow): .sandbox
            case (.doesNotKnow, .knows): .production
            default: nil
            }
        // Real APNs knows a token in one environment only (a token is made for one): both knowing it means the
        // endpoints probed are a stand-in (a mock, a recording proxy), whose answers say nothing of the routing.
        let bothKnow = Diagnoser.knowledge(sandbox) == .knows && Diagnoser.knowledge(production) == .knows
        for e in holders where e.status == .active && inScope(e) {
            let routing = FleetAuditRowRules.computeRouting(e, settings: settings)
            if bothKnow {
                found.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.probeBothEnvironments, severity: .warning, enrollment: e,
                        message:
                            "\(e.tenantSlug)/\(e.deviceID): both environments accept its token (\(answers)), which APNs never does for one token: the endpoints probed are a stand-in, and its answers do not tell where the token belongs.",
                        fix:
                            "Probe Apple's endpoints (the default) to judge routing; a mock that knows every token in both environments tests the plumbing, not the fleet."
                    ))
            }
            let push = routing.pushEnvironment
            if let proved {
                let fields = FleetAuditTally.RoutingGroup(
                    tokenEnvironment: routing.tokenEnvironment, pushEnvironment: push, decidedBy: routing.decidedBy,
                    tokenEvidence: routing.tokenEvidence)
                recordProbe(
                    replacing: fields,
                    with: FleetAuditTally.RoutingGroup(
                        tokenEnvironment: proved, pushEnvironment: push, decidedBy: routing.decidedBy,
                        tokenEvidence: .proved))
            }
            let name = "\(e.tenantSlug)/\(e.deviceID)"
            switch FleetProbeVerdict.judge(sandbox: sandbox, production: production, push: push) {
            case .healthy: continue
            case .unregistered(let env):
                found.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tokenUnregistered, severity: .error, enrollment: e,
                        message: "\(name): APNs \(env) says the token is no longer valid (\(answers)).",
                        fix: "Revoke the enrollment or clear its token; the app re-enrolls when it is installed again.")
                )
            case .wrongEnvironment(let known):
                found.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tokenWrongEnvironment, severity: .error, enrollment: e,
                        message:
                            "\(name): the backend sends it to \(push), but only \(known) knows the token (\(answers)).",
                        fix:
                            "Correct its build_environment (or the server's APNS_FORCE_ENV/APNS_ENV) so it resolves to \(known)."
                    ))
            case .unknown:
                found.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tokenUnknown, severity: .error, enrollment: e,
                        message: "\(name): neither environment knows the token (\(answers)): foreign or garbage.",
                        fix: "Clear the token; check that the app sends the hex of its own device token for this topic."
                    ))
            case .inconclusive:
                found.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.probeInconclusive, severity: .warning, enrollment: e,
                        message: "\(name): the probe got no conclusive answer (\(answers)).",
                        fix:
                            "Run the audit again with the same state file (state): inconclusive tokens are probed again."
                    ))
            }
        }
        return accept(found)
    }
}
