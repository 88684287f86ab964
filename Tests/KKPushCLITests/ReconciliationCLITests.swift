import Foundation
import KKPushBackend
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// `kkpush simulate --scenario vendor-id-change` and the diagnose finding for a phone whose
/// identifierForVendor changed, through the real binary.
@Suite("Enrollment reconciliation through the CLI")
struct ReconciliationCLITests {
    @Test("vendor-id-change --json: the old token is pushed before the sync, one push per live device after")
    func scenarioJSON() async throws {
        let r = try await CLI.run(["simulate", "--scenario", "vendor-id-change", "--json"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let o = try r.json()
        #expect(o["scenario"] as? String == "vendor-id-change" && o["reproduced"] as? Bool == true)
        let facts = try #require(o["facts"] as? [String: Any])
        let oldToken = try #require(facts["old_token_prefix"] as? String)
        let newToken = try #require(facts["new_token_prefix"] as? String)
        #expect(oldToken != newToken)
        #expect(facts["old_hardware_identifier"] as? String != facts["new_hardware_identifier"] as? String)
        let oldEnrollments = try #require(facts["old_enrollments"] as? [String])
        #expect(oldEnrollments.count == 2)

        // Before the sync: both tokens pushed; the old one (TestFlight: production, as Apple signs it) accepted by APNs
        // (200) and received by nobody.
        let before = try #require(facts["before_sync"] as? [String: Any])
        let deliveries = try #require(before["deliveries"] as? [[String: Any]])
        #expect(deliveries.count == 2)
        let old = try #require(deliveries.first { $0["token_prefix"] as? String == oldToken })
        #expect(old["environment"] as? String == "production")
        #expect(old["result"] as? String == "accepted" && old["apns_status"] as? Int == 200)
        #expect(old["handled_by"] is NSNull)
        #expect(
            Set(old["device_ids"] as? [String] ?? []).isSubset(
                of: Set(oldEnrollments.map { String($0.split(separator: "/")[1]) })))
        let fresh = try #require(deliveries.first { $0["token_prefix"] as? String == newToken })
        #expect(fresh["environment"] as? String == "production" && fresh["result"] as? String == "accepted")
        #expect((fresh["handled_by"] as? String)?.contains("App Store") == true)
        #expect(before["old_app_handled"] as? Int == 0)

        // The sync revokes exactly the old enrollments; their JWT is refused afterwards.
        let sync = try #require(facts["sync"] as? [String: Any])
        #expect(sync["status"] as? Int == 200 && sync["synced"] as? Bool == true)
        #expect(sync["enrollments_revoked"] as? Int == 2 && sync["teams_removed"] as? Int == 0)
        #expect(Set(sync["revoked"] as? [String] ?? []) == Set(oldEnrollments))
        let oldJWT = try #require(facts["old_jwt_after_sync"] as? [String: Any])
        #expect(oldJWT["status"] as? Int == 403 && oldJWT["error"] as? String == "enrollment-revoked")
        #expect(facts["backend_sync_again_status"] as? Int == 429)

        // After the sync: one push, to the live device's production token, handled.
        let after = try #require(facts["after_sync"] as? [String: Any])
        let afterDeliveries = try #require(after["deliveries"] as? [[String: Any]])
        #expect(afterDeliveries.count == 1)
        #expect(afterDeliveries.first?["token_prefix"] as? String == newToken)
        #expect(afterDeliveries.first?["environment"] as? String == "production")
        #expect(facts["new_app_handled"] as? Int == 2)
    }

    @Test("vendor-id-change in text: the steps, APNs' answer to the old token, and the verdict")
    func scenarioText() async throws {
        let r = try await CLI.run(["simulate", "--scenario", "vendor-id-change"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Scenario vendor-id-change"))
        #expect(r.stdout.contains("accepted (production), received by 0 app(s)"))
        #expect(r.stdout.contains("2 enrollment(s) revoked"))
        #expect(r.stdout.contains("old JWT now HTTP 403 enrollment-revoked"))
        #expect(r.stdout.contains("After sync: 1 push(es)"))
        #expect(r.stdout.contains("✓ reproduced as expected"))
        // Tokens and JWTs appear as prefixes only.
        #expect(r.stdout.range(of: #"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\."#, options: .regularExpression) == nil)
    }
}

/// `kkpush diagnose --store DB --email/--team`: active enrollments on several hardware identifiers.
@Suite("kkpush diagnose: enrollments on several hardware identifiers")
struct DiagnoseReconciliationCLITests {
    static let oldPhone = "0B1C2D3E-0000-4000-8000-00000000B001"
    static let newPhone = "0B1C2D3E-0000-4000-8000-00000000B002"
    static let otherParent = "0B1C2D3E-0000-4000-8000-00000000B003"

    /// Jan's phone after a TestFlight → App Store switch: the old identifier (development build, sandbox
    /// token) and the new one (production), each a manager of JO11-3 and an agovv member; another parent
    /// follows JO11-3 on a phone of their own; Piet has one phone only.
    static func makeStore() async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-recon-\(UUID()).sqlite")
        let store = try await SQLiteEnrollmentStore.open(path: file.path)
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        func e(
            _ id: String, _ tenant: String, _ teams: [String], _ role: EnrollmentRole, _ phone: String, _ env: String,
            _ token: String, _ mail: String?, _ at: Date
        ) -> Enrollment {
            Enrollment(
                deviceID: id, tenantSlug: tenant, teamCodes: teams, role: role, hardwareIdentifier: phone,
                apnsToken: String(repeating: token, count: 32), buildEnvironment: env, appVersion: "2.4.1",
                teamManagerEmail: mail, updatedAt: at)
        }
        let later = t0.addingTimeInterval(86_400)
        try await store.upsert(contentsOf: [
            e("old-manager", "vvwilhelmus", ["JO11-3"], .manager, oldPhone, "development", "0a", "jan@example.nl", t0),
            e("old-agovv", "agovv", ["JO10-5"], .member, oldPhone, "development", "0a", nil, t0),
            e(
                "new-manager", "vvwilhelmus", ["JO11-3"], .manager, newPhone, "production", "0b", "jan@example.nl",
                later),
            e("new-agovv", "agovv", ["JO10-5"], .member, newPhone, "production", "0b", nil, later),
            e("parent", "vvwilhelmus", ["JO11-3"], .member, otherParent, "production", "0c", nil, t0),
            e("piet", "vvwilhelmus", ["JO11-5"], .manager, otherParent, "production", "0c", "piet@example.nl", t0),
        ])
        try await store.close()
        return file
    }

    @Test("--email: both phones, the newest named, what the sync will revoke, and the revoke commands")
    func byEmail() async throws {
        let db = try await Self.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run(["diagnose", "--store", db.path, "--email", "jan@example.nl", "--json"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let findings = try #require(try r.json()["reconciliation"] as? [[String: Any]])
        #expect(findings.count == 1)
        let f = try #require(findings.first)
        #expect(f["code"] as? String == "several-hardware-identifiers" && f["severity"] as? String == "warning")
        let message = try #require(f["message"] as? String)
        #expect(message.contains("on 2 hardware identifiers"))
        #expect(message.contains("Newest: \(Self.newPhone)"))
        #expect(message.contains("Older: \(Self.oldPhone)"))
        #expect(message.contains("TestFlight ↔ App Store"))
        let why = try #require(f["why"] as? String)
        #expect(why.contains("superseded_device_tokens") && why.contains("enrollment_open"))
        let fix = try #require(f["fix"] as? String)
        #expect(fix.contains("POST /admin/enrollments/vvwilhelmus/old-manager/revoke"))
        #expect(!fix.contains("new-manager"))

        let text = try await CLI.run(["diagnose", "--store", db.path, "--email", "jan@example.nl"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("== Enrollment reconciliation"))
        #expect(text.stdout.contains("warning several-hardware-identifiers"))
        // Full device tokens are never printed.
        #expect(!text.stdout.contains(String(repeating: "0a", count: 32)))
    }

    @Test("--team: the look-alike phones only, not another parent's; one phone: no finding")
    func byTeam() async throws {
        let db = try await Self.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run([
            "diagnose", "--store", db.path, "--team", "JO11-3", "--tenant", "vvwilhelmus", "--json",
        ])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let json = try r.json()
        #expect((json["enrollments"] as? [[String: Any]])?.count == 3)
        let f = try #require((json["reconciliation"] as? [[String: Any]])?.first)
        let message = try #require(f["message"] as? String)
        #expect(message.contains(Self.oldPhone) && message.contains(Self.newPhone))
        #expect(!message.contains(Self.otherParent))

        let single = try await CLI.run(["diagnose", "--store", db.path, "--email", "piet@example.nl", "--json"])
        #expect(single.status == 0)
        #expect(try single.json()["reconciliation"] == nil)

        let noTenant = try await CLI.run(["diagnose", "--store", db.path, "--team", "JO11-3"])
        #expect(noTenant.status == 64 && noTenant.stderr.contains("--tenant"))
        let noStore = try await CLI.run(["diagnose", "--team", "JO11-3", "--tenant", "vvwilhelmus"])
        #expect(noStore.status == 64 && noStore.stderr.contains("--store"))
    }
}

/// The sync through `kkpush backend serve` (the real binary, its SQLite store, curl).
@Suite("kkpush backend serve: POST /api/mobile/v1/enrollments/sync")
struct BackendServeSyncCLITests {
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let phone = "5A6B7C8D-0000-4000-8000-00000000C001"

    static func json(_ text: String) -> [String: Any] {
        let body = text.split(separator: "\n").dropLast().joined(separator: "\n")
        return (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }

    @Test("enroll twice over HTTP, sync listing one: the other is revoked in the database; again: 429; bad: 400")
    func serveSync() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-sync")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let (server, base, _) = try await CLI.startBackend(
            ["--db", db], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        defer { server.send(SIGKILL) }
        var jwts: [String] = []
        for (tenant, team) in [("vvwilhelmus", "JO11-3"), ("agovv", "JO10-5")] {
            let body =
                #"{"tenant_slug": "\#(tenant)", "team_codes": ["\#(team)"], "role": "member", "hardware_identifier": "\#(Self.phone)", "device_id": "dev-\#(tenant)"}"#
            let (status, text) = try await StoreConcurrencyCLITests.curl([
                "-X", "POST", "-H", "Content-Type: application/json", "--data", body, base + "/admin/enrollments",
            ])
            #expect(status == 201, "\(text)")
            jwts.append(try #require(Self.json(text)["signed_device_token"] as? String))
        }
        let sync = base + "/api/mobile/v1/enrollments/sync"
        let good =
            #"{"enrollments": [{"tenant_slug": "vvwilhelmus", "role": "member", "team_codes": ["JO11-3"], "hardware_identifier": "\#(Self.phone)"}]}"#
        let bad = #"{"enrollments": [{"tenant_slug": "vvwilhelmus", "role": "member", "team_codes": "JO11-3"}]}"#
        func post(_ body: String, headers: Bool = false) async throws -> (Int, String) {
            try await StoreConcurrencyCLITests.curl(
                (headers ? ["-i"] : []) + [
                    "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(jwts[0])",
                    "--data", body, sync,
                ])
        }
        let (badStatus, badText) = try await post(bad)
        #expect(badStatus == 400)
        #expect((Self.json(badText)["error"] as? [String: Any])?["field"] as? String == "enrollments[0].team_codes")
        let (status, text) = try await post(good)
        #expect(status == 200, "\(text)")
        let summary = Self.json(text)["cleanup_summary"] as? [String: Any]
        #expect(summary?["enrollments_revoked"] as? Int == 1 && summary?["teams_removed"] as? Int == 0)
        let (again, againText) = try await post(good, headers: true)
        #expect(again == 429)
        // An hour less the seconds since the first sync (under load, a second or two may pass between them).
        let retryAfter = againText.lowercased().split(separator: "\r\n").first { $0.hasPrefix("retry-after: ") }
            .flatMap { Int($0.dropFirst("retry-after: ".count)) }
        #expect(retryAfter.map { (3540...3600).contains($0) } == true, "\(againText)")
        let (refused, _) = try await StoreConcurrencyCLITests.curl([
            "-H", "Authorization: Bearer \(jwts[1])", base + "/api/mobile/v1/diensten?tenant=agovv",
        ])
        #expect(refused == 403)
        await server.stop()
        let export = try await CLI.run(["backend", "export", "--db", db])
        #expect(export.status == 0, "\(export.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        let statuses = Dictionary(
            uniqueKeysWithValues: rows.map { ($0["device_id"] as? String ?? "", $0["status"] as? String ?? "") })
        #expect(statuses == ["dev-vvwilhelmus": "active", "dev-agovv": "revoked"])
    }
}
