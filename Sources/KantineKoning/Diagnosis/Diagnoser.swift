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
