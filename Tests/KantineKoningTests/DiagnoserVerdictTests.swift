import Foundation
import KKPushCore
import KantineKoning
import Testing

/// Several things wrong at once: the verdict is the root cause (the error whose fix unblocks delivery, or that
/// makes the others follow or not matter), and its code, why and fix are that one cause's.
@Suite("Diagnoser: the verdict is the root cause")
struct DiagnoserVerdictTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = String(repeating: "ab", count: 32)
    static let liveActivityTopic = "nl.kantinekoning.app.push-type.liveactivity"

    /// A healthy production enrollment: every fault below breaks exactly one thing in it.
    static func base() -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now)
        f.enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .manager,
            hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000001", apnsToken: token,
            buildEnvironment: "production", appVersion: "1.4.2", isTestUser: false, status: .active,
            teamManagerEmail: "m@example.com", updatedAt: now)
        return f
    }

    static func probe(_ sandbox: DiagnosisFacts.ProbeAnswer, _ production: DiagnosisFacts.ProbeAnswer)
        -> DiagnosisFacts.Probe
    {
        .init(
            sandbox: sandbox, production: production, sandboxEndpoint: "127.0.0.1:1", productionEndpoint: "127.0.0.1:2",
            usedFreshProviderToken: true)
    }

    static func rejected(_ status: Int, _ reason: APNsReason) -> DiagnosisFacts.ProbeAnswer {
        .rejected(status: status, reason: reason, timestamp: status == 410 ? now : nil)
    }

    static let badToken = rejected(400, .badDeviceToken)

    /// The key of Certificates/AuthKey_KKTEST0001.p8, as given when nothing is wrong with it.
    static func withKey(_ f: inout DiagnosisFacts, _ edit: (inout DiagnosisFacts.Key) -> Void) {
        var key =
            f.key
            ?? DiagnosisFacts.Key(keyID: "KKTEST0001", teamID: "KKTEAM0001", file: "Certificates/AuthKey_KKTEST0001.p8")
        edit(&key)
        f.key = key
    }

    /// The universal test certificate (Certificates/client-universal.p12), as given when nothing is wrong with it.
    static func withCertificate(_ f: inout DiagnosisFacts, _ edit: (inout DiagnosisFacts.Certificate) -> Void) {
        var cert =
            f.certificate
            ?? DiagnosisFacts.Certificate(
                file: "Certificates/client-universal.p12", bundleID: "nl.kantinekoning.app",
                topics: ["nl.kantinekoning.app", "nl.kantinekoning.app.voip", "nl.kantinekoning.app.complication"],
                environments: [.sandbox, .production], notAfter: now.addingTimeInterval(1e7))
        edit(&cert)
        f.certificate = cert
    }

    /// One thing wrong: the edit that breaks it, the error code it gives, and words its why and fix must
    /// contain (so a verdict that names this cause also explains and fixes this cause).
    struct Fault: Sendable, CustomTestStringConvertible {
        var code: String
        var why: String
        var fix: String
        var edit: @Sendable (inout DiagnosisFacts) -> Void
        /// Run after every edit: for faults that depend on where the push ends up going.
        var finish: (@Sendable (inout DiagnosisFacts) -> Void)? = nil
        var testDescription: String { code }
    }

    static let faults: [Fault] = [
        Fault(code: "connectivity", why: "HTTP/2", fix: "libnghttp2") { $0.localHTTP2 = false },
        Fault(code: "probe-inconclusive-network", why: "no conclusive answer", fix: "reachable") {
            $0.probe = probe(
                .failed(kind: "timeout", message: "no answer"), .failed(kind: "timeout", message: "no answer"))
        },
        Fault(code: "probe-inconclusive-apns", why: "no conclusive answer", fix: "in a few minutes") {
            $0.probe = probe(rejected(503, .serviceUnavailable), rejected(503, .serviceUnavailable))
        },
        Fault(code: "enrollment-revoked", why: "active enrollments only", fix: "Re-enroll") {
            $0.enrollment?.status = .revoked
        },
        Fault(code: "token-missing", why: "nowhere to push", fix: "Open the app") { $0.enrollment?.apnsToken = nil },
        Fault(code: "token-format", why: "BadDeviceToken", fix: "hex") {
            $0.enrollment?.apnsToken =
                "<abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789>"
        },
        Fault(code: "credentials-missing", why: "Without a provider token", fix: "AuthKey_") {
            $0.probe = probe(rejected(403, .missingProviderToken), rejected(403, .missingProviderToken))
        },
        Fault(code: "push-type-auth", why: "token-based authentication", fix: ".p8 key") { f in
            if f.certificate == nil { withCertificate(&f) { $0.topics.append(liveActivityTopic) } }
            f.pushType = "liveactivity"
            f.topic = liveActivityTopic
        },
        Fault(code: "key-invalid", why: "loadable P-256 key", fix: "Download the .p8 again") { f in
            withKey(&f) { $0.loadError = "The file is not a PKCS#8 P-256 key." }
        },
        Fault(code: "key-id-mismatch", why: "looks the key up by the key id", fix: "KKTEST0001") { f in
            withKey(&f) { $0.keyID = "KKTEST0002" }
        },
        Fault(code: "key-team-swapped", why: "kid must be the key id and its iss the team id", fix: "Swap them back") {
            f in
            withKey(&f) {
                $0.keyID = "KKTEAM0001"
                $0.teamID = "KKTEST0001"
            }
        },
        Fault(code: "certificate-expired", why: "expired client certificates", fix: "new APNs certificate") { f in
            withCertificate(&f) { $0.notAfter = now.addingTimeInterval(-86400) }
        },
        Fault(code: "certificate-invalid", why: "loadable certificate", fix: "Export the certificate") { f in
            withCertificate(&f) { $0.loadError = "The password is wrong." }
        },
        Fault(code: "provider-token-clock-skew", why: "clock is ahead", fix: "Synchronise") {
            $0.providerToken = .init(kid: "KKTEST0001", iss: "KKTEAM0001", issuedAt: now.addingTimeInterval(600))
        },
        Fault(code: "provider-token-expired", why: "older than one hour", fix: "Refresh") {
            $0.providerToken = .init(kid: "KKTEST0001", iss: "KKTEAM0001", issuedAt: now.addingTimeInterval(-7200))
        },
        Fault(code: "provider-token-churn", why: "TooManyProviderTokenUpdates", fix: "Reuse one token") {
            $0.providerTokenRefreshInterval = 300
        },
        Fault(code: "token-invalid", why: "in either environment", fix: "Re-enroll") {
            $0.probe = probe(badToken, badToken)
        },
        Fault(code: "token-unregistered", why: "app was removed", fix: "Stop sending to this token") {
            $0.probe = probe(badToken, rejected(410, .unregistered))
        },
        Fault(code: "server-env-override", why: "BadDeviceToken", fix: "fly secrets unset APNS_ENV") {
            $0.settings.legacyAPNSEnv = "sandbox"
        },
        Fault(code: "signed-build-mismatch", why: "provisioning profile", fix: "aps_environment") {
            $0.enrollment?.buildEnvironment = "development"
            $0.signedBuild = .init(
                apsEnvironment: "production", distribution: .testFlight, source: "--distribution testflight")
        },
        Fault(code: "build-environment-unknown", why: "build_environment", fix: "Send exactly \"development\"") {
            $0.enrollment?.buildEnvironment = "staging"
        },
        Fault(code: "environment-mismatch", why: "BadDeviceToken", fix: "is_test_user") {
            $0.enrollment?.isTestUser = true
        },
        Fault(
            code: "certificate-environment", why: "BadCertificateEnvironment", fix: "universal",
            edit: { f in withCertificate(&f) { _ in } },
            // Good for the other environment than the push goes to, wherever that ends up.
            finish: { f in
                let push = Diagnoser.diagnose(f).pushEnvironment ?? .production
                withCertificate(&f) { $0.environments = [push.other] }
            }),
        Fault(
            code: "key-environment", why: "BadEnvironmentKeyIdInToken", fix: "Use a key enabled for",
            edit: { f in withKey(&f) { _ in } },
            finish: { f in
                let push = Diagnoser.diagnose(f).pushEnvironment ?? .production
                withKey(&f) { $0.environmentRestriction = push.other }
            }),
        Fault(code: "token-not-for-topic", why: "another app", fix: "bundle id") {
            $0.probe = probe(badToken, rejected(400, .deviceTokenNotForTopic))
        },
        Fault(code: "certificate-topic", why: "does not cover", fix: "certificate of the app") { f in
            withCertificate(&f) {
                $0.bundleID = "com.example.other"
                $0.topics = ["com.example.other"]
            }
            if f.topic == nil { f.topic = "nl.kantinekoning.app" }
        },
        Fault(code: "topic-suffix", why: "BadTopic", fix: "nl.kantinekoning.app.voip") {
            $0.pushType = "voip"
            $0.topic = "nl.kantinekoning.app"
        },
        Fault(code: "push-type-missing", why: "requires it", fix: "apns-push-type") { $0.pushType = "" },
        Fault(code: "request-invalid", why: "BadPriority", fix: "Use 10 (immediate)") { $0.priority = 7 },
        Fault(code: "payload-invalid", why: "PayloadEmpty", fix: "JSON object") { $0.payload = [] },
    ]

    /// The root causes in the order the README documents, written out here: the verdict of every pair is
    /// the one of the two that comes first.
    static let documentedOrder = [
        "server-trust", "connectivity", "probe-inconclusive-network", "probe-inconclusive-apns", "enrollment-revoked",
        "build-other-app", "build-aps-missing", "token-missing", "token-format", "credentials-missing",
        "push-type-auth", "key-invalid", "key-id-mismatch",
        "key-team-swapped", "teams-on-one-connection", "certificate-expired", "certificate-invalid",
        "provider-token-clock-skew",
        "provider-token-expired", "provider-token-churn", "channel-topic-suffixed", "channel-id-invalid",
        "channel-rejected", "channel-other-environment", "channel-not-registered", "channel-expiration-no-storage",
        "token-invalid", "token-unregistered",
        "server-env-override", "signed-build-mismatch", "build-environment-unknown", "environment-mismatch",
        "certificate-environment", "key-environment", "token-not-for-topic", "certificate-topic", "key-topic",
        "topic-suffix",
        "push-type-missing", "request-invalid", "payload-invalid",
        "expiration-zero-offline", "push-expired", "replaced-while-offline", "app-force-quit",
        "background-no-content-available", "background-budget", "alert-no-background-refresh", "collapse-id-replaced",
        "receipt-dropped",
    ]

    static func diagnose(_ faults: [Fault]) -> Diagnosis {
        var f = base()
        for fault in faults { fault.edit(&f) }
        for fault in faults { fault.finish?(&f) }
        return Diagnoser.diagnose(f)
    }

    static func errorCodes(_ d: Diagnosis) -> Set<String> {
        Set(d.findings.filter { $0.severity == .error }.map(\.code.rawValue))
    }

    @Test("Each fault alone gives its own error, with its why and fix", arguments: faults)
    func alone(_ fault: Fault) throws {
        let d = Self.diagnose([fault])
        #expect(Self.errorCodes(d) == [fault.code], "\(d.findings.map(\.description))")
        let v = try #require(d.verdict)
        #expect(v.code.rawValue == fault.code)
        #expect(v.why.contains(fault.why), "why: \(v.why)")
        #expect(v.fix.contains(fault.fix), "fix: \(v.fix)")
    }

    /// Every pair of faults, applied in both orders. Where both errors are found, the verdict is the one that
    /// comes first in the documented order, its why and fix are that fault's, and the other error is still
    /// listed. Pairs that cannot occur together (one fault undoes the other: two probe answers, two values of one
    /// field, a key where a certificate-only rule applied) are counted apart.
    @Test("Every pair of errors that can occur together: the verdict is the root cause's code, why and fix")
    func pairs() {
        var together: Set<String> = []
        for (i, a) in Self.faults.enumerated() {
            for b in Self.faults[(i + 1)...] {
                for order in [[a, b], [b, a]] {
                    let d = Self.diagnose(order)
                    let codes = Self.errorCodes(d)
                    guard codes.contains(a.code), codes.contains(b.code) else { continue }
                    together.insert("\(a.code) + \(b.code)")
                    let rankA = Self.documentedOrder.firstIndex(of: a.code) ?? .max
                    let rankB = Self.documentedOrder.firstIndex(of: b.code) ?? .max
                    let (root, other) = rankA < rankB ? (a, b) : (b, a)
                    let pair = "\(order.map(\.code)): \(d.findings.map(\.description))"
                    guard let v = d.verdict else {
                        Issue.record("no verdict for \(pair)")
                        continue
                    }
                    #expect(v.code.rawValue == root.code, "\(pair)")
                    #expect(v.why.contains(root.why), "why of \(v.code) is not \(root.code)'s: \(v.why) — \(pair)")
                    #expect(v.fix.contains(root.fix), "fix of \(v.code) is not \(root.code)'s: \(v.fix) — \(pair)")
                    #expect(d.findings.contains { $0.code.rawValue == other.code && $0.severity == .error }, "\(pair)")
                    #expect(d.findings.first == v, "the verdict is listed first: \(pair)")
                }
            }
        }
        // Every fault meets most others: a drop here means combinations stopped being judged together.
        var apart: [String] = []
        for (i, a) in Self.faults.enumerated() {
            for b in Self.faults[(i + 1)...] where !together.contains("\(a.code) + \(b.code)") {
                apart.append("\(a.code) + \(b.code)")
            }
        }
        #expect(apart == Self.apart, "\(together.count) pairs together; apart: \(apart)")
        #expect(together.count == Self.faults.count * (Self.faults.count - 1) / 2 - Self.apart.count)
        for pair in Self.causalPairs { #expect(together.contains(pair), "\(pair) no longer occurs together") }
    }

    /// The pairs this harness cannot make occur together, and why: one probe answer per environment; one value
    /// per field (token, push type, provider token, routing decision); a key makes the connection token-based (so
    /// no `push-type-auth`); an unloadable certificate shows nothing else; a 410 confirms where the token is (so no
    /// routing mismatch). The pairs among them that can occur another way are tested below (`otherWays`).
    static let apart = [
        "probe-inconclusive-network + probe-inconclusive-apns", "probe-inconclusive-network + credentials-missing",
        "probe-inconclusive-network + token-invalid", "probe-inconclusive-network + token-unregistered",
        "probe-inconclusive-network + token-not-for-topic", "probe-inconclusive-apns + credentials-missing",
        "probe-inconclusive-apns + token-invalid", "probe-inconclusive-apns + token-unregistered",
        "probe-inconclusive-apns + token-not-for-topic", "token-missing + token-format",
        "credentials-missing + token-invalid", "credentials-missing + token-unregistered",
        "credentials-missing + token-not-for-topic", "push-type-auth + key-invalid", "push-type-auth + key-id-mismatch",
        "push-type-auth + key-team-swapped", "push-type-auth + key-environment", "push-type-auth + topic-suffix",
        "push-type-auth + push-type-missing", "key-id-mismatch + key-team-swapped",
        "certificate-expired + certificate-invalid", "certificate-invalid + certificate-environment",
        "certificate-invalid + certificate-topic", "provider-token-clock-skew + provider-token-expired",
        "token-invalid + token-unregistered", "token-invalid + token-not-for-topic",
        "token-unregistered + server-env-override", "token-unregistered + signed-build-mismatch",
        "token-unregistered + environment-mismatch", "token-unregistered + token-not-for-topic",
        "server-env-override + signed-build-mismatch", "server-env-override + build-environment-unknown",
        "server-env-override + environment-mismatch", "server-env-override + token-not-for-topic",
        "signed-build-mismatch + build-environment-unknown", "signed-build-mismatch + environment-mismatch",
        "signed-build-mismatch + token-not-for-topic", "build-environment-unknown + environment-mismatch",
        "environment-mismatch + token-not-for-topic", "topic-suffix + push-type-missing",
    ]

    /// The pairs where one error makes the other follow or not matter (the issue's cases among them).
    static let causalPairs = [
        "push-type-auth + certificate-expired", "push-type-auth + certificate-invalid",
        "push-type-auth + certificate-topic", "push-type-auth + certificate-environment",
        "key-invalid + key-id-mismatch", "key-invalid + key-team-swapped", "key-invalid + key-environment",
        "key-id-mismatch + key-environment", "token-invalid + server-env-override",
        "token-invalid + environment-mismatch", "server-env-override + key-environment",
        "environment-mismatch + certificate-environment", "enrollment-revoked + environment-mismatch",
        "token-missing + server-env-override", "key-id-mismatch + provider-token-clock-skew",
    ]

    // MARK: The pairs that occur together only another way

    struct Other: Sendable, CustomTestStringConvertible {
        var name: String
        var codes: Set<String>
        var verdict: String
        var facts: @Sendable () -> DiagnosisFacts
        var testDescription: String { name }
    }

    static let otherWays: [Other] = [
        Other(
            name: "a certificate, a live activity push, and a topic without its suffix",
            codes: ["push-type-auth", "topic-suffix", "certificate-topic"], verdict: "push-type-auth"
        ) {
            var f = base()
            withCertificate(&f) { _ in }
            f.pushType = "liveactivity"
            f.topic = "nl.kantinekoning.app.widget"
            return f
        },
        Other(
            name: "the token update names another app, and the server overrides the environment",
            codes: ["token-not-for-topic", "server-env-override"], verdict: "server-env-override"
        ) {
            var f = base()
            f.tokenUpdate = TokenUpdate(
                token: token, buildEnvironment: "production", appVersion: "1.4.2",
                hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000001", bundleID: "com.example.other")
            f.topic = "nl.kantinekoning.app"
            f.settings.legacyAPNSEnv = "sandbox"
            return f
        },
        Other(
            name: "APNs refuses the certificate, which has expired",
            codes: ["certificate-expired", "certificate-invalid"], verdict: "certificate-expired"
        ) {
            var f = base()
            withCertificate(&f) { $0.notAfter = now.addingTimeInterval(-86400) }
            f.probe = probe(rejected(403, .badCertificate), rejected(403, .badCertificate))
            return f
        },
        Other(
            name: "APNs answers InvalidProviderToken to a key id that is not the key file's",
            codes: ["key-id-mismatch"], verdict: "key-id-mismatch"
        ) {
            var f = base()
            withKey(&f) { $0.keyID = "KKTEST0002" }
            f.probe = probe(rejected(403, .invalidProviderToken), rejected(403, .invalidProviderToken))
            return f
        },
        Other(
            name: "APNs answers InvalidProviderToken to swapped ids", codes: ["key-team-swapped"],
            verdict: "key-team-swapped"
        ) {
            var f = base()
            withKey(&f) {
                $0.keyID = "KKTEAM0001"
                $0.teamID = "KKTEST0001"
            }
            f.probe = probe(rejected(403, .invalidProviderToken), rejected(403, .invalidProviderToken))
            return f
        },
        Other(
            name: "a key restricted to sandbox, APNs production says so, and the server overrides to production",
            codes: ["server-env-override", "key-environment"], verdict: "server-env-override"
        ) {
            var f = base()
            f.enrollment?.buildEnvironment = "development"
            f.settings.legacyAPNSEnv = "production"
            withKey(&f) {
                $0.keyID = "KKTEST0002"
                $0.file = "Certificates/AuthKey_KKTEST0002.p8"
            }
            f.probe = probe(rejected(400, .payloadEmpty), rejected(403, .badEnvironmentKeyIdInToken))
            return f
        },
    ]

    @Test("Pairs that occur together another way: the root cause is still the verdict", arguments: otherWays)
    func otherWay(_ c: Other) throws {
        let d = Diagnoser.diagnose(c.facts())
        #expect(Self.errorCodes(d).isSuperset(of: c.codes), "\(d.findings.map(\.description))")
        let v = try #require(d.verdict)
        #expect(v.code.rawValue == c.verdict, "\(d.findings.map(\.description))")
        let fault = try #require(Self.faults.first { $0.code == c.verdict })
        #expect(v.why.contains(fault.why), "why: \(v.why)")
        #expect(v.fix.contains(fault.fix), "fix: \(v.fix)")
    }

    // MARK: The issue's two verdicts

    @Test("A certificate for a live activity push: the verdict is token authentication, not the certificate's topics")
    func certificateForTokenOnlyPushType() throws {
        for pushType in ["liveactivity", "location"] {
            var f = Self.base()
            Self.withCertificate(&f) { _ in }
            f.pushType = pushType
            f.topic = PushType(pushType).topic(forBundleID: "nl.kantinekoning.app")
            let d = Diagnoser.diagnose(f)
            let v = try #require(d.verdict)
            #expect(v.code == DiagnosisCode.pushTypeAuth, "\(d.findings.map(\.description))")
            #expect(v.why.contains("token-based authentication") && !v.why.contains("does not cover"))
            #expect(v.fix.contains(".p8 key") && !v.fix.contains("certificate of the app"))
            // The certificate's topics are still listed, below the verdict.
            #expect(d.findings.dropFirst().contains { $0.code == DiagnosisCode.certificateTopic })
        }
        // With a key instead, the same push type and topic are fine.
        var f = Self.base()
        Self.withKey(&f) { _ in }
        f.pushType = "liveactivity"
        f.topic = Self.liveActivityTopic
        #expect(Diagnoser.diagnose(f).verdict == nil, "\(Diagnoser.diagnose(f).findings)")
    }

    @Test("A key id that is not the key file's is key-id-mismatch, with the file's key id; a swap is key-team-swapped")
    func keyIDs() throws {
        var mismatch = Self.base()
        Self.withKey(&mismatch) { $0.keyID = "KKTEST0002" }
        let d = Diagnoser.diagnose(mismatch)
        let v = try #require(d.verdict)
        #expect(v.code == DiagnosisCode.keyIDMismatch)
        #expect(v.message.contains("AuthKey_KKTEST0001.p8") && v.message.contains("KKTEST0002"))
        #expect(!v.why.lowercased().contains("swap") && !v.fix.lowercased().contains("swap"))
        #expect(v.fix.contains("KKTEST0001"))
        #expect(!d.findings.contains { $0.code == DiagnosisCode.keyTeamSwapped })

        // The same key id of the wrong form: one finding naming the right id, no format error about it.
        var lowercase = Self.base()
        Self.withKey(&lowercase) { $0.keyID = "kktest0001" }
        let l = Diagnoser.diagnose(lowercase)
        #expect(l.findings.filter { $0.severity == .error }.map(\.code) == [DiagnosisCode.keyIDMismatch])
        #expect(l.verdict?.fix.contains("KKTEST0001") == true)

        var swapped = Self.base()
        Self.withKey(&swapped) {
            $0.keyID = "KKTEAM0001"
            $0.teamID = "KKTEST0001"
        }
        let s = Diagnoser.diagnose(swapped)
        let sv = try #require(s.verdict)
        #expect(sv.code == DiagnosisCode.keyTeamSwapped)
        #expect(sv.fix.contains("key id is KKTEST0001") && sv.fix.contains("team id is KKTEAM0001"))
        #expect(!s.findings.contains { $0.code == DiagnosisCode.keyIDMismatch })

        // The team id is the key id, the key id right: not a swap, the team id is wrong.
        var same = Self.base()
        Self.withKey(&same) { $0.teamID = "KKTEST0001" }
        let sameVerdict = try #require(Diagnoser.diagnose(same).verdict)
        #expect(sameVerdict.code == DiagnosisCode.keyInvalid)
        #expect(sameVerdict.message.contains("team id") && sameVerdict.fix.contains("Keep the key id KKTEST0001"))

        // Both given the key id of another key: the key id is not the file's (the team id is not the key's either).
        var otherKey = Self.base()
        Self.withKey(&otherKey) {
            $0.keyID = "KKTEST0002"
            $0.teamID = "KKTEST0002"
        }
        #expect(Diagnoser.diagnose(otherKey).verdict?.code == DiagnosisCode.keyIDMismatch)

        // No file name to judge (a key from the environment): what the swap check found.
        var fromEnvironment = Self.base()
        fromEnvironment.key = .init(
            keyID: "KKTEST0002", teamID: "KKTEAM0001", file: "$APNS_KEY",
            swapProblems: [Problem(.warning, code: .keyIdMismatch, message: "not the key's id", fix: "")])
        #expect(Diagnoser.diagnose(fromEnvironment).verdict?.code == DiagnosisCode.keyIDMismatch)
    }

    @Test("APNs's InvalidProviderToken, confirmed: the key id finding when the ids show why, key-invalid otherwise")
    func probeConfirmsKeyID() throws {
        let invalid = Self.probe(
            Self.rejected(403, .invalidProviderToken), Self.rejected(403, .invalidProviderToken))
        var f = Self.base()
        Self.withKey(&f) { $0.keyID = "KKTEST0002" }
        f.probe = invalid
        let v = try #require(Diagnoser.diagnose(f).verdict)
        #expect(v.code == DiagnosisCode.keyIDMismatch && v.confirmed)
        #expect(v.message.contains("InvalidProviderToken") && v.message.contains("AuthKey_KKTEST0001.p8"))

        var plausible = Self.base()
        Self.withKey(&plausible) { _ in }
        plausible.probe = invalid
        let p = try #require(Diagnoser.diagnose(plausible).verdict)
        #expect(p.code == DiagnosisCode.keyInvalid && p.confirmed)
    }

    @Test(
        "A captured provider token: a kid that is not the key's is key-id-mismatch, kid and iss swapped key-team-swapped"
    )
    func providerTokenIDs() throws {
        var f = Self.base()
        Self.withKey(&f) { _ in }
        f.providerToken = .init(kid: "KKTEST0002", iss: "KKTEAM0001", issuedAt: Self.now)
        let mismatch = try #require(Diagnoser.diagnose(f).verdict)
        #expect(mismatch.code == DiagnosisCode.keyIDMismatch && mismatch.fix.contains("kid KKTEST0001"))
        f.providerToken = .init(kid: "KKTEAM0001", iss: "KKTEST0001", issuedAt: Self.now)
        let swapped = try #require(Diagnoser.diagnose(f).verdict)
        #expect(swapped.code == DiagnosisCode.keyTeamSwapped)
        #expect(
            swapped.fix.contains("kid = the key id KKTEST0001") && swapped.fix.contains("iss = the team id KKTEAM0001"))
    }

    @Test("The key id findings name no command-line flag (the library speaks of the key id and the team id)")
    func noFlags() {
        for faults in [["key-id-mismatch"], ["key-team-swapped"]] {
            let d = Self.diagnose(Self.faults.filter { faults.contains($0.code) })
            for finding in d.findings where finding.code.rawValue.hasPrefix("key-") {
                for text in [finding.message, finding.why, finding.fix] { #expect(!text.contains("--"), "\(text)") }
            }
        }
    }

    @Test("The precedence lists every verdict code once")
    func precedenceIsComplete() {
        let codes = DiagnosisCode.precedence.map(\.code)
        #expect(Set(codes).count == codes.count)
        #expect(codes.filter { $0 != DiagnosisCode.apnsUnavailable }.map(\.rawValue) == Self.documentedOrder)
        #expect(DiagnosisCode.precedence.allSatisfy { !$0.reason.isEmpty })
    }

    @Test("The README's precedence table lists the codes in the precedence's order")
    func readmeTable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(
            contentsOf: root.appendingPathComponent("Sources/kkpush/kkpush.docc/Diagnosis.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("| # | Verdict code |") })
        var codes: [String] = []
        for line in lines[(start + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cell = line.split(separator: "|")[1]
            codes += cell.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        #expect(codes == Self.documentedOrder)
    }
}
