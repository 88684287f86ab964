import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

@Suite("Enrollment reconciliation (POST /api/mobile/v1/enrollments/sync)")
struct EnrollmentReconciliationTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let path = "/api/mobile/v1/enrollments/sync"

    /// Phone A: the README's phone (vvwilhelmus manager JO11-3 + JO11-5, vvwilhelmus member JO13-1, agovv
    /// member JO10-5), one token; phone B: vvwilhelmus member JO13-1 and manager JO11-5, its own token.
    static func enrollments() -> [Enrollment] {
        func e(
            _ id: String, _ tenant: String, _ teams: [String], _ role: EnrollmentRole, _ phone: String, _ token: UInt8
        )
            -> Enrollment
        {
            Enrollment(
                deviceID: id, tenantSlug: tenant, teamCodes: teams, role: role, hardwareIdentifier: phone,
                apnsToken: BackendFixtures.token(token), buildEnvironment: "production", appVersion: "2.4.1",
                teamManagerEmail: role == .manager ? "jan@example.nl" : nil, updatedAt: t0)
        }
        return [
            e("a-manager", "vvwilhelmus", ["JO11-3", "JO11-5"], .manager, BackendFixtures.phoneA, 1),
            e("a-member", "vvwilhelmus", ["JO13-1"], .member, BackendFixtures.phoneA, 1),
            e("a-agovv", "agovv", ["JO10-5"], .member, BackendFixtures.phoneA, 1),
            e("b-member", "vvwilhelmus", ["JO13-1"], .member, BackendFixtures.phoneB, 2),
            e("b-manager", "vvwilhelmus", ["JO11-5"], .manager, BackendFixtures.phoneB, 2),
        ]
    }

    static func entry(_ tenant: String, _ role: String, _ teams: [String], _ phone: String = BackendFixtures.phoneA)
        -> [String: Any]
    {
        ["tenant_slug": tenant, "role": role, "team_codes": teams, "hardware_identifier": phone]
    }

    /// A backend holding ``enrollments()``, with a recording push sender; `body` gets the backend, the
    /// store, the sender and a JWT per device id.
    static func withBackend(
        _ clock: ManualWallClock, sqlite: Bool = false,
        _ body: (SimulatedBackend, any EnrollmentStore, RecordingSender, [String: String]) async throws -> Void
    ) async throws {
        let store: any EnrollmentStore
        var file: URL?
        if sqlite {
            let path = try BackendFixtures.temporaryDirectory().appendingPathComponent("sync.sqlite")
            let db = try await SQLiteEnrollmentStore.open(path: path.path)
            try await db.upsert(contentsOf: Self.enrollments())
            store = db
            file = path
        } else {
            store = InMemoryEnrollmentStore(Self.enrollments())
        }
        defer { if let file { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) } }
        let sender = RecordingSender()
        do {
            try await withSimulatedBackend(
                configuration: SimulatedBackendConfiguration(port: 0, secret: BackendFixtures.secret, clock: clock),
                store: store, sender: sender
            ) { backend in
                var jwts: [String: String] = [:]
                for e in try await store.all() { jwts[e.deviceID] = try backend.jwt.issue(for: e) }
                try await body(backend, store, sender, jwts)
            }
        } catch {
            try? await (store as? SQLiteEnrollmentStore)?.close()
            throw error
        }
        try await (store as? SQLiteEnrollmentStore)?.close()
    }

    static func status(_ store: any EnrollmentStore, _ id: String, _ tenant: String = "vvwilhelmus") async throws
        -> Enrollment?
    {
        try await store.get(deviceID: id, tenant: tenant)
    }

    @Test(
        "Revokes what the app no longer lists and removes the teams it dropped; the answer counts both",
        arguments: [false, true])
    func happyPath(sqlite: Bool) async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock, sqlite: sqlite) { backend, store, sender, jwts in
            let r = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"],
                json: [
                    "enrollments": [
                        Self.entry("vvwilhelmus", "manager", ["JO11-3"]), Self.entry("agovv", "member", ["JO10-5"]),
                    ]
                ])
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
            #expect(r.json["synced"] as? Bool == true)
            let summary = try #require(r.json["cleanup_summary"] as? [String: Any])
            #expect(summary["enrollments_revoked"] as? Int == 1 && summary["teams_removed"] as? Int == 1)
            #expect(
                ((r.json["revoked"] as? [[String: Any]]) ?? []).compactMap { $0["device_id"] as? String } == [
                    "a-member"
                ])
            let trimmed = try #require((r.json["trimmed"] as? [[String: Any]])?.first)
            #expect(
                trimmed["removed_team_codes"] as? [String] == ["JO11-5"]
                    && trimmed["team_codes"] as? [String] == ["JO11-3"])

            #expect(try await Self.status(store, "a-member")?.status == .revoked)
            let manager = try #require(try await Self.status(store, "a-manager"))
            #expect(manager.status == .active && manager.teamCodes == ["JO11-3"])
            #expect(manager.apnsToken == BackendFixtures.token(1))
            #expect(try await Self.status(store, "a-agovv", "agovv")?.status == .active)
            // Phone B is never touched.
            #expect(try await Self.status(store, "b-member")?.status == .active)
            #expect(try await Self.status(store, "b-manager")?.teamCodes == ["JO11-5"])

            // The revoked enrollment's JWT is refused; the trimmed one's still works for the teams it kept.
            let refused = try await HTTP.request(
                "GET", backend.baseURL + "/api/mobile/v1/diensten?tenant=vvwilhelmus", bearer: jwts["a-member"])
            #expect(refused.status == 403 && refused.errorCode == "enrollment-revoked")
            let kept = try await HTTP.request(
                "GET", backend.baseURL + "/api/mobile/v1/diensten?tenant=vvwilhelmus", bearer: jwts["a-manager"])
            #expect(kept.status == 200 && kept.json["team_codes"] as? [String] == ["JO11-3"])
            let ids = ((kept.json["diensten"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
            #expect(!ids.isEmpty && ids.allSatisfy { $0.hasPrefix("vvwilhelmus-jo11-3-") })

            // Fan-out: JO13-1 and JO11-5 reach phone B only; JO11-3 still reaches phone A.
            for (dienst, expected) in [
                ("vvwilhelmus-jo13-1-5", [BackendFixtures.token(2)]),
                ("vvwilhelmus-jo11-5-5", [BackendFixtures.token(2)]),
                ("vvwilhelmus-jo11-3-5", [BackendFixtures.token(1)]),
            ] {
                let before = sender.requests.count
                let change = try await HTTP.request(
                    "POST", backend.baseURL + "/admin/diensten/\(dienst)", json: ["volunteers": ["Ahmed"]])
                #expect(change.status == 200)
                #expect(sender.requests.dropFirst(before).map(\.request.deviceToken) == expected, "\(dienst)")
            }
        }
    }

    @Test("A sync never touches another phone's enrollments; an entry naming another phone is refused whole")
    func scope() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, store, _, jwts in
            let before = try await store.all()
            let foreign = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"],
                json: [
                    "enrollments": [
                        Self.entry("vvwilhelmus", "manager", ["JO11-3", "JO11-5"]),
                        Self.entry("vvwilhelmus", "member", ["JO13-1"], BackendFixtures.phoneB),
                    ]
                ])
            #expect(foreign.status == 400 && foreign.errorCode == "hardware-identifier-out-of-scope")
            #expect(
                (foreign.json["error"] as? [String: Any])?["field"] as? String == "enrollments[1].hardware_identifier")
            #expect(try await store.all() == before)

            // Phone B lists one of its two: only B's manager is revoked; A keeps everything.
            let b = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["b-member"],
                json: [
                    "enrollments": [
                        Self.entry("vvwilhelmus", "member", ["JO13-1"], BackendFixtures.phoneB.lowercased())
                    ]
                ])
            #expect(b.status == 200)
            #expect((b.json["cleanup_summary"] as? [String: Any])?["enrollments_revoked"] as? Int == 1)
            let after = try await store.all()
            #expect(after.filter { $0.status == .revoked }.map(\.deviceID) == ["b-manager"])
            #expect(
                after.filter { $0.hardwareIdentifier == BackendFixtures.phoneA }
                    == before.filter { $0.hardwareIdentifier == BackendFixtures.phoneA })
        }
    }

    @Test("Tenants with enrollment_open false or season_ended true keep their enrollments")
    func closedTenants() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, store, _, jwts in
            let closed = try await HTTP.request(
                "POST", backend.baseURL + "/admin/tenants/agovv", json: ["enrollment_open": false])
            #expect(closed.status == 200)
            let tenantInfo = try await HTTP.request(
                "GET", backend.baseURL + "/api/mobile/v1/tenant?tenant=agovv", bearer: jwts["a-agovv"])
            #expect((tenantInfo.json["tenant"] as? [String: Any])?["enrollment_open"] as? Bool == false)
            // Only the manager listed, with one team: agovv is closed (kept), the rest is reconciled.
            let r = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"],
                json: ["enrollments": [Self.entry("vvwilhelmus", "manager", ["JO11-3"])]])
            #expect(r.status == 200)
            let summary = try #require(r.json["cleanup_summary"] as? [String: Any])
            #expect(summary["enrollments_revoked"] as? Int == 1 && summary["teams_removed"] as? Int == 1)
            let protected = try #require((r.json["protected"] as? [[String: Any]])?.first)
            #expect(protected["device_id"] as? String == "a-agovv")
            #expect((protected["reason"] as? String)?.contains("enrollment_open is false") == true)
            #expect(try await Self.status(store, "a-agovv", "agovv")?.status == .active)

            // Season ended in vvwilhelmus: after the hour, a sync listing only agovv changes nothing there.
            let ended = try await HTTP.request(
                "POST", backend.baseURL + "/admin/tenants/vvwilhelmus", json: ["season_ended": true])
            #expect(ended.status == 200)
            _ = try await HTTP.request(
                "POST", backend.baseURL + "/admin/tenants/agovv", json: ["enrollment_open": true])
            clock.advance(by: 3600)
            let second = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-agovv"],
                json: ["enrollments": [Self.entry("agovv", "member", ["JO10-5"])]])
            #expect(second.status == 200)
            #expect((second.json["cleanup_summary"] as? [String: Any])?["enrollments_revoked"] as? Int == 0)
            #expect(try await Self.status(store, "a-manager")?.teamCodes == ["JO11-3"])
            #expect(try await Self.status(store, "a-manager")?.status == .active)
        }
    }

    @Test("Once an hour per phone on the backend's clock: 429 with Retry-After, then allowed again")
    func throttle() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, _, _, jwts in
            let body: [String: Any] = [
                "enrollments": [
                    Self.entry("vvwilhelmus", "manager", ["JO11-3", "JO11-5"]),
                    Self.entry("vvwilhelmus", "member", ["JO13-1"]),
                    Self.entry("agovv", "member", ["JO10-5"]),
                ]
            ]
            let first = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], json: body)
            #expect(first.status == 200)
            #expect((first.json["cleanup_summary"] as? [String: Any])?["enrollments_revoked"] as? Int == 0)
            clock.advance(by: 600)
            // Another enrollment's JWT of the same phone: the same throttle.
            let again = try await HTTP.request("POST", backend.baseURL + Self.path, bearer: jwts["a-agovv"], json: body)
            #expect(again.status == 429 && again.errorCode == "sync-throttled")
            #expect(again.json["throttled"] as? Bool == true && again.json["synced"] as? Bool == false)
            #expect(again.json["retry_after_seconds"] as? Int == 3000 && again.headers["retry-after"] == "3000")
            // A malformed body is still a 400, not a 429.
            let bad = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], json: ["enrollments": "all"])
            #expect(bad.status == 400)
            // Phone B is not throttled by A.
            let b = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["b-member"],
                json: [
                    "enrollments": [
                        Self.entry("vvwilhelmus", "member", ["JO13-1"], BackendFixtures.phoneB),
                        Self.entry("vvwilhelmus", "manager", ["JO11-5"], BackendFixtures.phoneB),
                    ]
                ])
            #expect(b.status == 200)
            clock.advance(by: 2999)
            let early = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], json: body)
            #expect(early.status == 429 && early.headers["retry-after"] == "1")
            clock.advance(by: 1)
            let later = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], json: body)
            #expect(later.status == 200 && later.json["synced"] as? Bool == true)
        }
    }

    @Test("Superseded JWTs of the app's previous identifierForVendor bring that phone's enrollments into scope")
    func superseded() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, store, _, jwts in
            let bogus = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["b-member"],
                json: [
                    "enrollments": [Self.entry("vvwilhelmus", "member", ["JO13-1"], BackendFixtures.phoneB)],
                    "superseded_device_tokens": ["not-a-jwt"],
                ])
            #expect(bogus.status == 400 && bogus.errorCode == "superseded-token-invalid")
            #expect((bogus.json["error"] as? [String: Any])?["field"] as? String == "superseded_device_tokens[0]")
            // B keeps both of its own, and passes one JWT of phone A: all of A's enrollments are revoked.
            let r = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["b-member"],
                json: [
                    "enrollments": [
                        Self.entry("vvwilhelmus", "member", ["JO13-1"], BackendFixtures.phoneB),
                        Self.entry("vvwilhelmus", "manager", ["JO11-5"], BackendFixtures.phoneB),
                    ],
                    "superseded_device_tokens": [jwts["a-manager"]!],
                ])
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
            #expect((r.json["cleanup_summary"] as? [String: Any])?["enrollments_revoked"] as? Int == 3)
            let all = try await store.all()
            #expect(Set(all.filter { $0.status == .revoked }.map(\.deviceID)) == ["a-manager", "a-member", "a-agovv"])
        }
    }

    /// One malformed body: what is sent, the code and the field the 400 names.
    struct BadBody: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var code: String
        var field: String
        var testDescription: String { name }
    }

    static let phone = BackendFixtures.phoneA
    static func good(_ replacing: String = "") -> String {
        "{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \"hardware_identifier\": \"\(phone)\"\(replacing)}"
    }

    static let badBodies: [BadBody] = {
        let e = "\"hardware_identifier\": \"\(phone)\""
        let many = Array(repeating: good(), count: 21).joined(separator: ",")
        let big = String(repeating: " ", count: (1 << 20) + 10)
        return [
            BadBody(name: "empty", body: "", code: "body-empty", field: ""),
            BadBody(name: "not JSON", body: "enrollments=all", code: "body-not-json", field: ""),
            BadBody(name: "truncated JSON", body: "{\"enrollments\": [", code: "body-not-json", field: ""),
            BadBody(name: "an array", body: "[\(good())]", code: "body-not-object", field: ""),
            BadBody(name: "a string", body: "\"sync\"", code: "body-not-object", field: ""),
            BadBody(name: "no enrollments", body: "{}", code: "missing-field", field: "enrollments"),
            BadBody(
                name: "enrollments null", body: "{\"enrollments\": null}", code: "wrong-type", field: "enrollments"),
            BadBody(
                name: "enrollments object", body: "{\"enrollments\": \(good())}", code: "wrong-type",
                field: "enrollments"),
            BadBody(
                name: "enrollments empty", body: "{\"enrollments\": []}", code: "enrollments-empty",
                field: "enrollments"),
            BadBody(
                name: "entry a string", body: "{\"enrollments\": [\"vvwilhelmus\"]}", code: "wrong-type",
                field: "enrollments[0]"),
            BadBody(
                name: "entry null", body: "{\"enrollments\": [\(good()), null]}", code: "wrong-type",
                field: "enrollments[1]"),
            BadBody(
                name: "tenant missing",
                body: "{\"enrollments\": [{\"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "missing-field", field: "enrollments[0].tenant_slug"),
            BadBody(
                name: "tenant empty",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \" \", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "missing-field", field: "enrollments[0].tenant_slug"),
            BadBody(
                name: "tenant a number",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": 7, \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "wrong-type", field: "enrollments[0].tenant_slug"),
            BadBody(
                name: "tenant with a slash",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vv/w\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "identifier-invalid", field: "enrollments[0].tenant_slug"),
            BadBody(
                name: "role missing",
                body: "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "missing-field", field: "enrollments[0].role"),
            BadBody(
                name: "role unknown",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"lid\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "invalid-role", field: "enrollments[0].role"),
            BadBody(
                name: "role capitalised",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"Manager\", \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "invalid-role", field: "enrollments[0].role"),
            BadBody(
                name: "role a boolean",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": true, \"team_codes\": [\"JO11-3\"], \(e)}]}",
                code: "wrong-type", field: "enrollments[0].role"),
            BadBody(
                name: "team_codes missing",
                body: "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \(e)}]}",
                code: "missing-field", field: "enrollments[0].team_codes"),
            BadBody(
                name: "team_codes a string",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": \"JO11-3\", \(e)}]}",
                code: "wrong-type", field: "enrollments[0].team_codes"),
            BadBody(
                name: "team_codes empty",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [], \(e)}]}",
                code: "missing-field", field: "enrollments[0].team_codes"),
            BadBody(
                name: "team_codes with a number",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\", 5], \(e)}]}",
                code: "wrong-type", field: "enrollments[0].team_codes[1]"),
            BadBody(
                name: "team_codes with an empty string",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"\"], \(e)}]}",
                code: "wrong-type", field: "enrollments[0].team_codes[0]"),
            BadBody(
                name: "team code twice",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\", \"JO11-3\"], \(e)}]}",
                code: "team-code-repeated", field: "enrollments[0].team_codes[1]"),
            BadBody(
                name: "six team codes",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"A\",\"B\",\"C\",\"D\",\"E\",\"F\"], \(e)}]}",
                code: "too-many-teams", field: "enrollments[0].team_codes"),
            BadBody(
                name: "hardware_identifier missing",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"]}]}",
                code: "missing-field", field: "enrollments[0].hardware_identifier"),
            BadBody(
                name: "hardware_identifier a number",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \"hardware_identifier\": 42}]}",
                code: "wrong-type", field: "enrollments[0].hardware_identifier"),
            BadBody(
                name: "hardware_identifier another phone",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \"hardware_identifier\": \"\(BackendFixtures.phoneB)\"}]}",
                code: "hardware-identifier-out-of-scope", field: "enrollments[0].hardware_identifier"),
            BadBody(
                name: "hardware_identifier concatenated with the bundle id",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \"hardware_identifier\": \"\(phone)nl.kantinekoning.app\"}]}",
                code: "hardware-identifier-out-of-scope", field: "enrollments[0].hardware_identifier"),
            BadBody(
                name: "entry twice", body: "{\"enrollments\": [\(good()), \(good())]}", code: "duplicate-enrollment",
                field: "enrollments[1]"),
            BadBody(
                name: "21 entries", body: "{\"enrollments\": [\(many)]}", code: "too-many-enrollments",
                field: "enrollments"),
            BadBody(
                name: "over 1 MB", body: "{\"enrollments\": [\(good())]}\(big)", code: "body-too-large",
                field: "enrollments"),
            BadBody(
                name: "caller's own enrollment not listed",
                body:
                    "{\"enrollments\": [{\"tenant_slug\": \"agovv\", \"role\": \"member\", \"team_codes\": [\"JO10-5\"], \(e)}]}",
                code: "caller-not-listed", field: "enrollments"),
            BadBody(
                name: "superseded tokens a string",
                body: "{\"enrollments\": [\(good())], \"superseded_device_tokens\": \"x\"}",
                code: "wrong-type", field: "superseded_device_tokens"),
            BadBody(
                name: "superseded token a number",
                body: "{\"enrollments\": [\(good())], \"superseded_device_tokens\": [1]}",
                code: "wrong-type", field: "superseded_device_tokens[0]"),
        ]
    }()

    @Test("Every malformed body is a 400 naming the field and the fix; nothing changes, no throttle is spent")
    func malformedBodies() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, store, _, jwts in
            let before = try await store.all()
            for bad in Self.badBodies {
                let r = try await HTTP.request(
                    "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], body: Data(bad.body.utf8))
                let error = r.json["error"] as? [String: Any]
                #expect(r.status == 400, "\(bad.name): \(String(decoding: r.body.prefix(300), as: UTF8.self))")
                #expect(error?["code"] as? String == bad.code, "\(bad.name)")
                #expect(error?["field"] as? String == bad.field, "\(bad.name)")
                let message = error?["message"] as? String ?? ""
                #expect(
                    bad.field.isEmpty || message.contains(bad.field.split(separator: "[").first.map(String.init) ?? ""),
                    "\(bad.name): \(message)")
                let fix = error?["fix"] as? String ?? ""
                #expect(!fix.isEmpty, "\(bad.name)")
                #expect(r.json["synced"] as? Bool == false, "\(bad.name)")
            }
            // Bytes that are not UTF-8, and nesting deeper than any parser should follow.
            let deep =
                "{\"enrollments\": " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
                + "}"
            for (name, data) in [
                ("not UTF-8", Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D])),
                ("deep nesting", Data(deep.utf8)),
                ("NaN", Data(#"{"enrollments": NaN}"#.utf8)), ("a bare number", Data("1e999".utf8)),
            ] {
                let r = try await HTTP.request(
                    "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], body: data)
                #expect(r.status == 400, "\(name): \(String(decoding: r.body.prefix(300), as: UTF8.self))")
                #expect(r.errorCode != nil, "\(name)")
            }
            #expect(try await store.all() == before)
            // No throttle was spent: a good body syncs at once.
            let ok = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"],
                body: Data("{\"enrollments\": [\(Self.good())]}".utf8))
            #expect(ok.status == 200)
            // Unknown fields are reported, never silently ignored.
            clock.advance(by: 3600)
            let extra = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"],
                body: Data("{\"enrollments\": [\(Self.good(", \"colour\": 1"))], \"dry\": true}".utf8))
            #expect(extra.status == 200)
            let codes = ((extra.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(codes == ["unknown-field", "unknown-field"])
        }
    }

    @Test("No JWT, a revoked enrollment's JWT: 401 and 403")
    func authentication() async throws {
        let clock = ManualWallClock(Self.t0)
        try await Self.withBackend(clock) { backend, _, _, jwts in
            let body = Data("{\"enrollments\": [\(Self.good())]}".utf8)
            let none = try await HTTP.request("POST", backend.baseURL + Self.path, body: body)
            #expect(none.status == 401 && none.errorCode == "jwt-missing")
            _ = try await HTTP.request("POST", backend.baseURL + "/admin/enrollments/vvwilhelmus/a-manager/revoke")
            let revoked = try await HTTP.request(
                "POST", backend.baseURL + Self.path, bearer: jwts["a-manager"], body: body)
            #expect(revoked.status == 403 && revoked.errorCode == "enrollment-revoked")
        }
    }
}
