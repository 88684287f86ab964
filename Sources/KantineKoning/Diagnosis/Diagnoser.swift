import Foundation
import KKPushCore

/// Finds why a push does not arrive, from whatever ``DiagnosisFacts`` tell.
///
/// The rules, in the order they run (the verdict is the root cause, chosen separately by
/// ``DiagnosisCode/precedence``):
/// 1. this machine: libcurl without HTTP/2 (`connectivity`);
/// 2. the signed build given (`build-other-app`: another app's build; `build-aps-missing`: signed without
///    aps-environment, so no token ever exists; an entitlements file is a request, never evidence);
///    the device token: format as the backend stores it (`token-format`), missing (`token-missing`), the
///    enrollment revoked (`enrollment-revoked`);
/// 3. routing: where the backend sends the push (``EnvironmentResolver``, or `--env`) against where the
///    token belongs (the probe if it tells, else the `build_environment`): `server-env-override`,
///    `build-environment-unknown`, `environment-mismatch`;
/// 4. the probe's answers in the environment the push goes to: `token-unregistered`, `token-not-for-topic`,
///    `token-invalid` (neither environment knows the token), the credential reasons, `connectivity`;
/// 5. credentials: the key (`key-invalid`, `key-id-mismatch`, `key-team-swapped`, `key-environment`), the certificate
///    (`certificate-expired`, `certificate-environment`, `certificate-topic`), a captured provider token
///    (`provider-token-expired`, `provider-token-clock-skew`, `provider-token-churn`);
/// 6. the request: its header values (`request-invalid`: push type, priority, expiration, collapse id), topic
///    suffix and push type (`topic-suffix`, `push-type-missing`, `push-type-auth`), and the payload
///    (`payload-invalid`), with the same call as the client's pre-flight (KKPushCore's `APNsRequestRules.check(_:authentication:judging:)`);
///    for a broadcast (`channel`), the broadcast rules instead (`channel-topic-suffixed`, `channel-id-invalid`,
///    `request-invalid`, `payload-invalid`) and what the channel-management hosts said (`channel-not-registered`,
///    `channel-other-environment`, `channel-expiration-no-storage`);
/// 7. after APNs accepts it, when the device side is known (its app state, connectivity, background pushes per
///    hour, or the mock's delivery record): `expiration-zero-offline`, `push-expired`, `replaced-while-offline`,
///    `app-force-quit`, `background-no-content-available`, `background-budget`, `alert-no-background-refresh`,
///    `collapse-id-replaced` (`Diagnoser+Delivery.swift`, each citing Apple's page).
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
                    fix:
                        "apt-get install libcurl4-openssl-dev libnghttp2-14; the libcurl in use says whether it has HTTP/2 (versionCommand)."
                ))
        }
        findings += buildFindings(facts)
        findings += tokenFindings(facts)
        let routing = routingFindings(facts)
        findings += routing.findings
        findings += probeFindings(
            facts, pushEnvironment: routing.pushEnvironment, tokenEnvironment: routing.tokenEnvironment)
        findings += keyFindings(facts, pushEnvironment: routing.pushEnvironment)
        findings += certificateFindings(facts, pushEnvironment: routing.pushEnvironment)
        findings += providerTokenFindings(facts)
        // A broadcast's request follows the broadcast rules (a plain bundle id, liveactivity only, 5120 bytes).
        findings +=
            facts.channel == nil
            ? requestFindings(facts) : channelFindings(facts, pushEnvironment: routing.pushEnvironment)
        findings += deliveryFindings(facts)
        findings += facts.tokenUpdateProblems.filter { !coveredTokenUpdateCodes.contains($0.code) }.map {
            Finding(
                $0.severity, DiagnosisCode($0.code), message: "Token update: \($0.message)",
                why: "A token update the backend rejects leaves the enrollment with an old token, or none.", fix: $0.fix
            )
        }
        return Diagnosis(
            findings: findings, pushEnvironment: routing.pushEnvironment, tokenEnvironment: routing.tokenEnvironment)
    }

    /// Token-update problem codes that the rules here already judge (so they are not reported twice).
    static let coveredTokenUpdateCodes: Set<Problem.Code> = [
        // the device token (judged by `tokenFindings` with the same DeviceToken rules)
        .badDeviceToken, .missingDeviceToken, .tokenDescriptionForm, .tokenNormalized, .tokenUppercase,
        // the build environment and the server's settings (judged by `routingFindings`)
        .buildEnvironmentUnknown, .buildEnvironmentNonstandard, .buildEnvironmentNotNormalized,
        .buildEnvironmentContradictsToken, .buildEnvironmentTesting, .buildEnvironmentMissing,
        .forceEnvOverride, .serverEnvOverride, .serverEnvLegacy, .forceEnvIgnored, .serverEnvIgnored,
        .testUserProductionBuild,
    ]

    // MARK: Helpers

    /// The bundle id of a topic: the topic without a push type's suffix.
    static func baseBundleID(of topic: String) -> String {
        PushType.implied(byTopic: topic)?.bundleID(fromTopic: topic) ?? topic
    }

    static func isAppleID(_ s: String) -> Bool {
        s.count == 10 && s.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
    }

    /// How the key id and team id given relate to each other and to the key file's name.
    enum KeyIDs: Equatable {
        /// Nothing wrong that the ids and the file name show.
        case consistent
        /// The key id is not the key's: not the id in the file name (`fileKeyID`, nil if the file name does
        /// not tell and a check told it).
        case mismatch(fileKeyID: String?)
        /// Given the other way round: the team id is the key file's key id, the key id something else.
        case swapped(fileKeyID: String?)
        /// The key id and the team id are the same value.
        case same(fileKeyID: String?)
    }

    /// The key id in a file name of Apple's form `AuthKey_<KEYID>.p8`, nil for any other name.
    static func keyID(fromFileName path: String?) -> String? {
        guard let path else { return nil }
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
        return isAppleID(id) ? id : nil
    }

    /// What the key id and team id of `key` say: from the key file's name when it is Apple's
    /// `AuthKey_<KEYID>.p8`, else from the ids themselves, else from the problems a check found
    /// (``DiagnosisFacts/Key/swapProblems``).
    static func keyIDs(_ key: DiagnosisFacts.Key) -> KeyIDs {
        if let fileKeyID = keyID(fromFileName: key.file) {
            if key.keyID == fileKeyID { return key.teamID == fileKeyID ? .same(fileKeyID: fileKeyID) : .consistent }
            return key.teamID == fileKeyID ? .swapped(fileKeyID: fileKeyID) : .mismatch(fileKeyID: fileKeyID)
        }
        if key.keyID == key.teamID { return .same(fileKeyID: nil) }
        let codes = Set(key.swapProblems.map(\.code))
        if codes.contains(.keyTeamSwapped) { return .swapped(fileKeyID: nil) }
        if codes.contains(.keyIdMismatch) { return .mismatch(fileKeyID: nil) }
        return .consistent
    }

    static func quote(_ s: String?) -> String { s.map { "\"\($0)\"" } ?? "(none)" }

    static func iso(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }
}
