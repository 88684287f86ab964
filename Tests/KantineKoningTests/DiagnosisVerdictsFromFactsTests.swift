import Foundation
import KKPushCore
import KantineKoning
import Testing

@Suite("Diagnoser: verdicts from facts")
struct DiagnosisVerdictsFromFactsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = String(repeating: "ab", count: 32)

    static func enrollment(
        build: String?, token: String? = DiagnosisVerdictsFromFactsTests.token, testUser: Bool = false,
        status: EnrollmentStatus = .active
    ) -> Enrollment {
        Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .manager,
            hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000001", apnsToken: token, buildEnvironment: build,
            appVersion: "1.4.2", isTestUser: testUser, status: status, teamManagerEmail: "m@example.com",
            updatedAt: now)
    }

    static func probe(sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer, fresh: Bool = true)
        -> DiagnosisFacts.Probe
    {
        .init(
            sandbox: sandbox, production: production, sandboxEndpoint: "127.0.0.1:1", productionEndpoint: "127.0.0.1:2",
            usedFreshProviderToken: fresh)
    }

    static let badToken = DiagnosisFacts.ProbeAnswer.rejected(status: 400, reason: .badDeviceToken, timestamp: nil)
    static let knows = DiagnosisFacts.ProbeAnswer.rejected(status: 400, reason: .payloadEmpty, timestamp: nil)
    static func rejected(_ status: Int, _ reason: APNsReason) -> DiagnosisFacts.ProbeAnswer {
        .rejected(status: status, reason: reason, timestamp: reason == .unregistered ? now : nil)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var verdict: String?
        var facts: @Sendable () -> DiagnosisFacts
        var testDescription: String { name }
    }

    static func facts(_ edit: (inout DiagnosisFacts) -> Void) -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now)
        edit(&f)
        return f
    }

    static let cases: [Case] = [
        Case(name: "healthy production enrollment", verdict: nil) {
            facts { $0.enrollment = enrollment(build: "production") }
        },
        Case(name: "healthy development enrollment, probe agrees", verdict: nil) {
            facts {
                $0.enrollment = enrollment(build: "development")
                $0.probe = probe(sandbox: knows, production: badToken)
            }
        },
        Case(name: "APNS_ENV=sandbox with a production build", verdict: "server-env-override") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.settings.legacyAPNSEnv = "sandbox"
            }
        },
        Case(name: "APNS_FORCE_ENV=production with a development build, probe", verdict: "server-env-override") {
            facts {
                $0.enrollment = enrollment(build: "development")
                $0.settings.forceEnv = "production"
                $0.probe = probe(sandbox: knows, production: badToken)
            }
        },
        Case(name: "build says development, probe finds production", verdict: "environment-mismatch") {
            facts {
                $0.enrollment = enrollment(build: "development")
                $0.probe = probe(sandbox: badToken, production: knows)
            }
        },
        Case(name: "test user with a production build", verdict: "environment-mismatch") {
            facts { $0.enrollment = enrollment(build: "production", testUser: true) }
        },
        Case(name: "--env sandbox with a production token", verdict: "environment-mismatch") {
            facts {
                $0.deviceTokenGiven = token
                $0.sendEnvironment = .sandbox
                $0.probe = probe(sandbox: badToken, production: knows)
            }
        },
        // Without evidence of where the token belongs, "testing" and "Development" are the warnings env resolve
        // and token verify give (BuildEnvironment.judgement); a value outside the contract is an error.
        Case(name: "testing build environment, no probe: a warning only", verdict: nil) {
            facts { $0.enrollment = enrollment(build: "testing") }
        },
        Case(name: "\"Development\", no probe: a warning only", verdict: nil) {
            facts { $0.enrollment = enrollment(build: "Development") }
        },
        Case(name: "\"Development\", probe finds sandbox", verdict: "environment-mismatch") {
            facts {
                $0.enrollment = enrollment(build: "Development")
                $0.probe = probe(sandbox: knows, production: badToken)
            }
        },
        Case(name: "unknown build environment, no probe", verdict: "build-environment-unknown") {
            facts { $0.enrollment = enrollment(build: "staging") }
        },
        Case(name: "push type typo (the pre-flight's InvalidPushType)", verdict: "request-invalid") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.pushType = "backgroud"
            }
        },
        Case(name: "priority 7 (the pre-flight's BadPriority)", verdict: "request-invalid") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.priority = 7
            }
        },
        Case(name: "unknown build environment, probe finds sandbox", verdict: "build-environment-unknown") {
            facts {
                $0.enrollment = enrollment(build: "staging")
                $0.probe = probe(sandbox: knows, production: badToken)
            }
        },
        Case(name: "description-form token stored", verdict: "token-format") {
            facts {
                $0.enrollment = enrollment(
                    build: "production",
                    token: "<abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789>")
            }
        },
        Case(name: "not hex", verdict: "token-format") { facts { $0.deviceTokenGiven = "xyz" } },
        Case(name: "410 in the token's environment", verdict: "token-unregistered") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.probe = probe(sandbox: badToken, production: rejected(410, .unregistered))
            }
        },
        Case(name: "wrong topic", verdict: "token-not-for-topic") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.topic = "com.other.app"
                $0.probe = probe(sandbox: badToken, production: rejected(400, .deviceTokenNotForTopic))
            }
        },
        Case(name: "fresh token judged expired: clock skew", verdict: "provider-token-clock-skew") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.probe = probe(
                    sandbox: rejected(403, .expiredProviderToken), production: rejected(403, .expiredProviderToken))
            }
        },
        Case(name: "captured provider token two hours old", verdict: "provider-token-expired") {
            facts {
                $0.providerToken = .init(kid: "KKTEST0001", iss: "KKTEAM0001", issuedAt: now.addingTimeInterval(-7200))
            }
        },
        Case(name: "captured provider token from the future", verdict: "provider-token-clock-skew") {
            facts {
                $0.providerToken = .init(kid: "KKTEST0001", iss: "KKTEAM0001", issuedAt: now.addingTimeInterval(600))
            }
        },
        Case(name: "refresh every 5 minutes", verdict: "provider-token-churn") {
            facts { $0.providerTokenRefreshInterval = 300 }
        },
        Case(name: "InvalidProviderToken with swapped ids", verdict: "key-team-swapped") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.key = .init(
                    keyID: "KKTEAM0001", teamID: "KKTEST0001", file: "AuthKey_KKTEST0001.p8",
                    swapProblems: [Problem(.warning, code: .keyTeamSwapped, message: "swapped", fix: "swap")])
                $0.probe = probe(
                    sandbox: rejected(403, .invalidProviderToken), production: rejected(403, .invalidProviderToken))
            }
        },
        Case(name: "InvalidProviderToken, ids plausible", verdict: "key-invalid") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.key = .init(keyID: "KKTEST0009", teamID: "KKTEAM0001")
                $0.probe = probe(
                    sandbox: rejected(403, .invalidProviderToken), production: rejected(403, .invalidProviderToken))
            }
        },
        Case(name: "key restricted to sandbox, pushes to production", verdict: "key-environment") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.key = .init(keyID: "KKTEST0002", teamID: "KKTEAM0001", environmentRestriction: .sandbox)
            }
        },
        Case(name: "probe: BadEnvironmentKeyIdInToken", verdict: "key-environment") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.probe = probe(sandbox: knows, production: rejected(403, .badEnvironmentKeyIdInToken))
            }
        },
        Case(name: "development certificate, production push", verdict: "certificate-environment") {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.certificate = .init(
                    file: "c.p12", bundleID: "nl.kantinekoning.app", environments: [.sandbox],
                    notAfter: now.addingTimeInterval(1e7))
            }
        },
        Case(name: "expired certificate", verdict: "certificate-expired") {
            facts {
                $0.certificate = .init(
                    file: "c.p12", bundleID: "nl.kantinekoning.app", environments: [.sandbox, .production],
                    notAfter: now.addingTimeInterval(-86400))
            }
        },
        Case(name: "no apns-push-type", verdict: "push-type-missing") { facts { $0.pushType = "" } },
        Case(name: "voip without .voip", verdict: "topic-suffix") {
            facts {
                $0.pushType = "voip"
                $0.topic = "nl.kantinekoning.app"
            }
        },
        Case(name: "connection refused", verdict: "probe-inconclusive-network") {
            facts {
                $0.deviceTokenGiven = token
                $0.probe = probe(
                    sandbox: .failed(kind: "connection", message: "refused"),
                    production: .failed(kind: "connection", message: "refused"))
            }
        },
        Case(name: "no HTTP/2 locally", verdict: "connectivity") { facts { $0.localHTTP2 = false } },
        Case(name: "APNs 503 in both environments", verdict: "probe-inconclusive-apns") {
            facts {
                $0.deviceTokenGiven = token
                let unavailable = DiagnosisFacts.ProbeAnswer.rejected(
                    status: 503, reason: .serviceUnavailable, timestamp: nil)
                $0.probe = probe(sandbox: unavailable, production: unavailable)
            }
        },
        Case(
            name: "429 where the push goes, the token known elsewhere: still inconclusive",
            verdict: "probe-inconclusive-apns"
        ) {
            facts {
                $0.deviceTokenGiven = token
                $0.sendEnvironment = .production
                $0.probe = probe(
                    sandbox: knows, production: .rejected(status: 429, reason: .tooManyRequests, timestamp: nil))
            }
        },
        Case(
            name: "BadDeviceToken where the push goes, the other environment timed out",
            verdict: "probe-inconclusive-network"
        ) {
            facts {
                $0.deviceTokenGiven = token
                $0.sendEnvironment = .production
                $0.probe = probe(sandbox: .failed(kind: "timeout", message: "no answer"), production: badToken)
            }
        },
        Case(name: "known where the push goes, the other environment timed out: no verdict", verdict: nil) {
            facts {
                $0.deviceTokenGiven = token
                $0.sendEnvironment = .production
                $0.probe = probe(sandbox: .failed(kind: "timeout", message: "no answer"), production: knows)
            }
        },
        Case(name: "revoked enrollment", verdict: "enrollment-revoked") {
            facts { $0.enrollment = enrollment(build: "production", status: .revoked) }
        },
        Case(name: "enrollment without token", verdict: "token-missing") {
            facts { $0.enrollment = enrollment(build: "production", token: nil) }
        },
        Case(name: "neither environment knows the token", verdict: "token-invalid") {
            facts {
                $0.deviceTokenGiven = token
                $0.probe = probe(sandbox: badToken, production: badToken)
            }
        },
        Case(name: "legacy APNS_ENV matching the device: warning only", verdict: nil) {
            facts {
                $0.enrollment = enrollment(build: "production")
                $0.settings.legacyAPNSEnv = "production"
            }
        },
    ]

    @Test("Each broken set-up gets its verdict; healthy ones get none", arguments: cases)
    func verdicts(_ c: Case) {
        let d = Diagnoser.diagnose(c.facts())
        #expect(d.verdict?.code.rawValue == c.verdict, "findings: \(d.findings.map { "\($0.severity) \($0.code)" })")
        #expect(d.hasVerdict == (c.verdict != nil))
        #expect(
            d.blocksDelivery == (c.verdict != nil && !DiagnosisCode.inconclusive.map(\.rawValue).contains(c.verdict!)))
        if let v = d.verdict {
            #expect(!v.fix.isEmpty && !v.why.isEmpty && !v.message.isEmpty)
            #expect(d.findings.first == v, "the verdict comes first")
        }
    }

    @Test("The override verdict carries the README's fix")
    func overrideFix() throws {
        var f = DiagnosisFacts(now: Self.now)
        f.enrollment = Self.enrollment(build: "production")
        f.settings.legacyAPNSEnv = "sandbox"
        let v = try #require(Diagnoser.diagnose(f).verdict)
        #expect(v.fix.contains("fly secrets unset APNS_ENV -a kantine-koning"))
    }

    @Test("An enrollment's aps_environment routes the push: a Debug build on TestFlight is no mismatch")
    func apsEnvironment() throws {
        var f = DiagnosisFacts(now: Self.now)
        var e = Self.enrollment(build: "development")
        e.apsEnvironment = "production"
        f.enrollment = e
        let d = Diagnoser.diagnose(f)
        #expect(d.pushEnvironment == .production && d.tokenEnvironment == .production)
        #expect(!d.findings.contains { $0.code == DiagnosisCode.environmentMismatch }, "\(d.findings)")
        // An override against the signature is the verdict, judged by what the app is signed for.
        f.settings.legacyAPNSEnv = "sandbox"
        let v = try #require(Diagnoser.diagnose(f).verdict)
        #expect(v.code == DiagnosisCode.serverEnvOverride && v.message.contains("aps_environment \"production\""))
        // A token update without it (today's app) is what the backend routes by: build_environment again.
        f.settings.legacyAPNSEnv = nil
        f.tokenUpdate = TokenUpdate(
            token: Self.token, buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: e.hardwareIdentifier)
        #expect(Diagnoser.diagnose(f).pushEnvironment == .sandbox)
    }

    @Test("Findings are ordered errors first, by rank")
    func ordering() {
        var f = DiagnosisFacts(now: Self.now)
        f.pushType = ""
        f.localHTTP2 = false
        f.enrollment = Self.enrollment(build: "production")
        f.settings.legacyAPNSEnv = "production"
        let d = Diagnoser.diagnose(f)
        let severities = d.findings.map(\.severity)
        #expect(severities == severities.sorted(by: >))
        #expect(d.verdict?.code.rawValue == "connectivity")
    }
}
