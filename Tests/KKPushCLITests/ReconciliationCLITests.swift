import Foundation
import Testing

/// `kkpush simulate --scenario vendor-id-change` and the diagnose finding for a phone whose
/// identifierForVendor changed, through the real binary.
@Suite("Enrollment reconciliation through the CLI")
struct ReconciliationCLITests {
    @Test("vendor-id-change --json: the old sandbox token is pushed before the sync, one push per live device after")
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

        // Before the sync: both tokens pushed; the old sandbox one accepted by APNs (200) and received by nobody.
        let before = try #require(facts["before_sync"] as? [String: Any])
        let deliveries = try #require(before["deliveries"] as? [[String: Any]])
        #expect(deliveries.count == 2)
        let old = try #require(deliveries.first { $0["token_prefix"] as? String == oldToken })
        #expect(old["environment"] as? String == "sandbox")
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
        #expect(r.stdout.contains("accepted (sandbox), received by 0 app(s)"))
        #expect(r.stdout.contains("2 enrollment(s) revoked"))
        #expect(r.stdout.contains("old JWT now HTTP 403 enrollment-revoked"))
        #expect(r.stdout.contains("After sync: 1 push(es)"))
        #expect(r.stdout.contains("✓ reproduced as expected"))
        // Tokens and JWTs appear as prefixes only.
        #expect(r.stdout.range(of: #"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\."#, options: .regularExpression) == nil)
    }
}
