import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The lookups of the backend's troubleshooting (`Repo.get_by(DeviceEnrollment, team_manager_email: …)`, by
/// token alike) must find exactly the row they mean: the audit names the rows where they would raise or miss;
/// and `--probe` says when both environments accept one token (a stand-in, never APNs).
@Suite("audit: lookups by e-mail and token, and a probe both environments accept")
struct AuditLookupCLITests {
    static func hardware(_ n: Int) -> String { "6F1C2A8E-0000-4000-8000-00000000A00\(n)" }
    static func token(_ n: Int) -> String { String(repeating: "c\(n)", count: 32) }

    @Test("Rows of one tenant sharing an e-mail (also in another case) or a token are named; others are not")
    func lookups() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/backend.sqlite"
        try await BackendShapedSQLite.make(
            db,
            rows: [
                // A manager re-enrolled: the old row revoked, the new active, one address.
                .init(
                    device: "m-old", role: "manager", status: "revoked", hardware: Self.hardware(1), token: nil,
                    email: "jan@x.nl"),
                .init(
                    device: "m-new", role: "manager", hardware: Self.hardware(1), token: Self.token(1),
                    email: "jan@x.nl"),
                // The same phone's member enrollment in the same tenant: the same token.
                .init(device: "member", hardware: Self.hardware(1), token: Self.token(1)),
                // One address in two cases in one tenant.
                .init(
                    device: "p1", role: "manager", hardware: Self.hardware(2), token: Self.token(2),
                    email: "Piet@x.nl"),
                .init(
                    device: "p2", role: "manager", hardware: Self.hardware(3), token: Self.token(3), email: "piet@x.nl"),
                // The re-enrolled manager's address in another tenant: another tenant's lookup, no finding.
                .init(
                    tenant: "agovv", device: "other-tenant", role: "manager", hardware: Self.hardware(5),
                    token: Self.token(5), email: "jan@x.nl"),
                // Alone: no finding.
                .init(
                    device: "solo", role: "manager", hardware: Self.hardware(4), token: Self.token(4),
                    email: "solo@x.nl"),
            ])
        let r = try await CLI.run(["audit", "--store", db, "--json"])
        let (found, _, _) = try AuditCLITests.parse(r.stdout)
        #expect(found["email-lookup-ambiguous"] == ["m-old", "m-new", "p1", "p2"], "\(r.stdout)")
        #expect(found["token-lookup-ambiguous"] == ["m-new", "member"], "\(r.stdout)")
        #expect(found["token-shared"] == nil, "one phone: not token-shared")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let raises = try #require(lines.first { $0.contains("\"email-lookup-ambiguous\"") && $0.contains("m-old") })
        #expect(raises.contains("raises Ecto.MultipleResultsError"), "\(raises)")
        let cased = try #require(lines.first { $0.contains("\"email-lookup-ambiguous\"") && $0.contains("\"p1\"") })
        #expect(cased.contains("another case"), "\(cased)")
        #expect(!r.stdout.contains(Self.token(1)), "never a whole token")
    }

    @Test("--probe against a stand-in that accepts every token in both environments says so")
    func bothEnvironments() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let folder = try BackendShapedSQLite.makeFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let db = folder + "/backend.sqlite"
            try await BackendShapedSQLite.make(
                db, rows: [.init(device: "d1", hardware: Self.hardware(1), token: Self.token(5))])
            let r = try await CLI.run([
                "audit", "--store", db, "--probe", "--json", "--ignore-process-env",
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url", server.productionEndpoint.baseURL,
                "--ca-file", try #require(server.caFile), "--topic", "nl.kantinekoning.app",
            ])
            let (found, _, _) = try AuditCLITests.parse(r.stdout)
            #expect(found["probe-both-environments"] == ["d1"], "\(r.stdout) \(r.stderr)")
            #expect(r.stdout.contains("a stand-in"))
        }
    }
}
