import KKPushCore
import KantineKoning
import Testing

/// The server-trust finding of `diagnose --probe` (`Diagnoser.serverTrustFindings`): said only for an untrusted chain
/// the check could judge.
@Suite("Diagnoser: the server-trust finding")
struct DiagnoserServerTrustTests {
    @Test("The server-trust finding: only for an untrusted chain the check could judge")
    func findingRule() {
        let untrusted = DiagnosisFacts.ServerTrust(
            trustStore: "the CA file x", trusted: false, problem: "p", missingCertificate: "Some Root",
            missingIsRoot: true, fix: "Add it.")
        let findings = Diagnoser.serverTrustFindings(untrusted, where: "sandbox (h:1)")
        #expect(findings.map(\.code) == [DiagnosisCode.serverTrust])
        #expect(findings.first?.message.contains("the root \"Some Root\" is not in the CA file x") == true)
        #expect(findings.first?.fix == "Add it.")
        var trusted = untrusted
        trusted.trusted = true
        #expect(Diagnoser.serverTrustFindings(trusted, where: "s").isEmpty)
        var failed = untrusted
        failed.checkFailed = "No connection"
        #expect(Diagnoser.serverTrustFindings(failed, where: "s").isEmpty)
    }
}
