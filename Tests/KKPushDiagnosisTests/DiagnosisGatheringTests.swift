import Foundation
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushMock
import KKPushTestSupport
import KantineKoning
import Testing

/// `diagnose`'s fact gathering as a library call: a request of plain values in, ``DiagnosisFacts`` (and the report)
/// out, against the repository's real keys and the in-process mock.
@Suite("DiagnosisGathering: a request's facts, refusals and the probe")
struct DiagnosisGatheringTests {
    static let key = Repository.certificate("AuthKey_KKTEST0001.p8")
    static let topic = "nl.kantinekoning.app"

    static func request() -> DiagnosisRequest { DiagnosisRequest(now: Date()) }

    static func keyed(keyID: String = "KKTEST0001", teamID: String = "KKTEAM0001", file: String = key)
        -> DiagnosisRequest.Key
    {
        DiagnosisRequest.Key(file: .init(path: file, label: "key"), keyID: keyID, teamID: teamID)
    }

    /// The refusal `body` throws, if it is one.
    static func refusal(_ body: () async throws -> Void) async -> DiagnosisGathering.Refusal? {
        do {
            try await body()
            return nil
        } catch {
            return error as? DiagnosisGathering.Refusal
        }
    }

    @Test("The request's values become the facts: topic, push type 'none', the key loaded with no swap")
    func factsFromValues() async throws {
        var r = Self.request()
        r.deviceToken = String(repeating: "ab", count: 32)
        r.topic = Self.topic
        r.pushType = "none"
        r.priority = 5
        r.buildEnvironment = "production"
        r.key = Self.keyed()
        let f = try await DiagnosisGathering.gather(r)
        #expect(f.topic == Self.topic)
        #expect(f.pushType == "")
        #expect(f.priority == 5)
        #expect(f.deviceToken?.value == r.deviceToken)
        let key = try #require(f.key)
        #expect(key.keyID == "KKTEST0001" && key.teamID == "KKTEAM0001")
        #expect(key.file == Self.key)
        #expect(key.loadError == nil)
        #expect(key.swapProblems.isEmpty, "\(key.swapProblems)")
    }

    @Test("Key and team ids swapped: the swap check's problem is among the facts, and the rules name it")
    func swappedIDs() async throws {
        var r = Self.request()
        r.key = Self.keyed(keyID: "KKTEAM0001", teamID: "KKTEST0001")
        let f = try await DiagnosisGathering.gather(r)
        let key = try #require(f.key)
        #expect(!key.swapProblems.isEmpty)
        let codes = Diagnoser.diagnose(f).findings.map(\.code.rawValue)
        #expect(codes.contains("key-team-swapped"), "\(codes)")
    }

    @Test("A key file that is no key is a finding (its load error), a missing one an input error")
    func unusableKeys() async throws {
        var notAKey = Self.request()
        notAKey.key = Self.keyed(file: Repository.certificate("ca.crt"))
        let f = try await DiagnosisGathering.gather(notAKey)
        #expect(f.key?.loadError != nil)

        var missing = Self.request()
        missing.key = Self.keyed(file: Repository.certificate("AuthKey_NOSUCHKEY.p8"))
        await #expect(throws: KKPushError.self) { _ = try await DiagnosisGathering.gather(missing) }
    }

    @Test("What cannot be judged is refused, for the caller to word: ids missing, a key environment without a key")
    func refusals() async throws {
        var noTeam = Self.request()
        noTeam.key = DiagnosisRequest.Key(file: .init(path: Self.key, label: "key"), keyID: "KKTEST0001", teamID: nil)
        #expect(await Self.refusal { _ = try await DiagnosisGathering.gather(noTeam) } == .keyIncomplete)

        var restricted = Self.request()
        restricted.keyEnvironment = .production
        #expect(
            await Self.refusal { _ = try await DiagnosisGathering.gather(restricted) } == .keyEnvironmentWithoutKey)
    }

    @Test("The probe needs a well-formed token and a credential: each refused before anything is sent")
    func probeRefusals() async throws {
        // Nothing listens on port 9 of the loopback: a request that got that far would fail, not be refused.
        let nowhere = try APNsEndpoint.parse(url: "https://127.0.0.1:9", environment: .sandbox)
        let probe = DiagnosisRequest.Probe(sandbox: nowhere, production: nowhere, timeout: .seconds(1))
        var noToken = Self.request()
        noToken.key = Self.keyed()
        noToken.probe = probe
        #expect(await Self.refusal { _ = try await DiagnosisGathering.gather(noToken) } == .probeNoToken)

        var noCredential = Self.request()
        noCredential.deviceToken = String(repeating: "ab", count: 32)
        noCredential.probe = probe
        #expect(await Self.refusal { _ = try await DiagnosisGathering.gather(noCredential) } == .probeNoCredential)

        var unusable = noCredential
        unusable.key = Self.keyed(file: Repository.certificate("ca.crt"))
        let refused = await Self.refusal { _ = try await DiagnosisGathering.gather(unusable) }
        guard case .probeCredentialUnusable(let reason)? = refused else {
            Issue.record("expected probeCredentialUnusable, got \(String(describing: refused))")
            return
        }
        #expect(!reason.isEmpty)
    }

    @Test("Probe against the mock: a sandbox token judged as production is an environment mismatch, proved")
    func probeAgainstMock() async throws {
        var configuration = MockServerConfiguration.forTests()
        configuration.certificatesDirectory = Repository.certificates.path
        try await withMockServer(configuration: configuration) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            var r = Self.request()
            r.deviceToken = device.token
            r.topic = Self.topic
            r.buildEnvironment = "production"
            r.key = Self.keyed()
            r.probe = DiagnosisRequest.Probe(
                sandbox: server.sandboxEndpoint, production: server.productionEndpoint,
                caFile: server.caFile.map { .init(path: $0, label: "caFile") }, timeout: .seconds(10))
            let report = try await DiagnosisGathering.run(r, enrollments: [])
            #expect(report.entries.count == 1)
            let diagnosis = try #require(report.headline)
            #expect(diagnosis.verdict?.code.rawValue == "environment-mismatch", "\(diagnosis.findings)")
            #expect(diagnosis.tokenEnvironment == .sandbox)
            #expect(report.hasVerdict)
        }
    }

    @Test("The report's JSON: null where nothing is known, one entry per enrollment, labelled")
    func reportJSON() async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let clean = DiagnoseReport(
            entries: [
                .init(label: nil, diagnosis: Diagnosis(findings: [], pushEnvironment: nil, tokenEnvironment: nil))
            ]
        )
        let object = try #require(
            try JSONSerialization.jsonObject(with: encoder.encode(clean)) as? [String: Any])
        #expect(object["verdict"] is NSNull)
        #expect(object["push_environment"] is NSNull)
        #expect(object["token_environment"] is NSNull)
        #expect(object["blocks_delivery"] as? Bool == false)
        #expect(object["enrollments"] == nil)
        #expect(object["reconciliation"] == nil)

        let finding = Finding(.error, .environmentMismatch, message: "m", why: "w", fix: "f")
        let blocked = Diagnosis(findings: [finding], pushEnvironment: .production, tokenEnvironment: .sandbox)
        let two = DiagnoseReport(entries: [
            .init(label: "a/1 (member)", diagnosis: clean.entries[0].diagnosis),
            .init(label: "a/2 (member)", diagnosis: blocked),
        ])
        let top = try #require(try JSONSerialization.jsonObject(with: encoder.encode(two)) as? [String: Any])
        // The first blocking diagnosis is on top.
        #expect((top["verdict"] as? [String: Any])?["code"] as? String == "environment-mismatch")
        #expect(Set(((top["verdict"] as? [String: Any]) ?? [:]).keys) == ["code", "message", "fix", "why"])
        let entries = try #require(top["enrollments"] as? [[String: Any]])
        #expect(entries.map { $0["enrollment"] as? String } == ["a/1 (member)", "a/2 (member)"])
        #expect(entries[0]["verdict"] is NSNull)
    }
}
