import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

/// "Every answer true", the backend's part: an existing enrollment is never replaced without being asked,
/// an e-mail is never dropped, and every JSON input's error names the entry and the field.
@Suite("Backend answers: enroll, import and admin bodies")
struct AnswersBackendTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func record(_ id: String, token: String? = nil) -> Enrollment {
        Enrollment(
            deviceID: id, tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .manager,
            hardwareIdentifier: BackendFixtures.phoneA, apnsToken: token,
            buildEnvironment: token == nil ? nil : "development",
            appVersion: token == nil ? nil : "1.4.2", teamManagerEmail: "jan@example.nl", updatedAt: t0)
    }

    static func router(_ store: any EnrollmentStore) throws -> BackendRouter {
        let clock = ManualWallClock(t0)
        return BackendRouter(
            store: store, diensten: DienstStore(DienstStore.seed(now: t0)),
            jwt: try DeviceJWT(secret: BackendFixtures.secret, clock: clock), sender: nil, clock: clock)
    }

    static func post(_ router: BackendRouter, _ target: String, _ body: String, method: String = "POST") async -> (
        Int, [String: Any]
    ) {
        let r = await router.handle(BackendRequest(method: method, target: target, body: Data(body.utf8)))
        return (r.status, (try? JSONSerialization.jsonObject(with: r.body) as? [String: Any]) ?? [:])
    }

    static func error(_ object: [String: Any]) -> (code: String, message: String) {
        let e = object["error"] as? [String: Any] ?? [:]
        return (e["code"] as? String ?? "", e["message"] as? String ?? "")
    }

    @Test(
        "enroll(replacing: false) refuses an existing device id and changes nothing; replacing says what it replaced",
        arguments: ["sqlite", "postgres", "memory"])
    func enrollRefusesExisting(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sqlite =
            kind == "sqlite"
            ? try await SQLiteEnrollmentStore.open(path: dir.appendingPathComponent("e.sqlite").path) : nil
        let postgres = kind == "postgres" ? try await PostgresFixtures.store() : nil
        let store: any EnrollmentStore = sqlite ?? postgres?.0 ?? InMemoryEnrollmentStore()
        try await store.upsert(Self.record("dev-x", token: BackendFixtures.token(1)))
        var fresh = Self.record("dev-x")
        fresh.role = .member
        fresh.teamManagerEmail = nil
        do {
            _ = try await store.enroll(fresh, replacing: false) { _ in "jwt" }
            Issue.record("an existing enrollment was replaced without being asked")
        } catch let exists as EnrollmentExistsError {
            #expect(exists.existing.apnsToken == BackendFixtures.token(1))
            #expect(exists.held.contains("build_environment \"development\"") && exists.held.contains("jan@example.nl"))
            #expect(!exists.held.contains(BackendFixtures.token(1)))  // the token is shown redacted
        }
        #expect(try await store.get(deviceID: "dev-x", tenant: "vvwilhelmus")?.apnsToken == BackendFixtures.token(1))
        let outcome = try await store.enroll(fresh, replacing: true) { _ in "jwt" }
        #expect(outcome.replaced?.apnsToken == BackendFixtures.token(1))
        #expect(outcome.enrollment.generation == 2)
        try await sqlite?.close()
        await postgres?.close()
    }

    @Test(
        "POST /admin/enrollments: 409 for an existing device_id unless replace is true; an e-mail for a member is 422, never dropped"
    )
    func adminEnroll() async throws {
        let store = InMemoryEnrollmentStore([Self.record("dev-x", token: BackendFixtures.token(1))])
        let router = try Self.router(store)
        let base =
            #""tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "hardware_identifier": "\#(BackendFixtures.phoneA)""#
        let (conflict, answer) = await Self.post(
            router, "/admin/enrollments", #"{\#(base), "role": "member", "device_id": "dev-x"}"#)
        #expect(conflict == 409)
        #expect(Self.error(answer).code == "enrollment-exists")
        #expect(
            Self.error(answer).message.contains("vvwilhelmus/dev-x")
                && Self.error(answer).message.contains("nothing was changed"))
        #expect(await store.get(deviceID: "dev-x", tenant: "vvwilhelmus")?.apnsToken == BackendFixtures.token(1))

        let (replaced, replacedAnswer) = await Self.post(
            router, "/admin/enrollments",
            #"{\#(base), "role": "member", "device_id": "dev-x", "replace": true}"#)
        #expect(replaced == 201)
        #expect((replacedAnswer["replaced"] as? [String: Any])?["apns_token"] as? String == BackendFixtures.token(1))

        let (member, memberAnswer) = await Self.post(
            router, "/admin/enrollments",
            #"{\#(base), "role": "member", "team_manager_email": "a@b.nl"}"#)
        #expect(member == 422)
        #expect(Self.error(memberAnswer).code == "email-without-manager")
        #expect(Self.error(memberAnswer).message.contains("team_manager_email"))

        let (manager, managerAnswer) = await Self.post(
            router, "/admin/enrollments",
            #"{\#(base), "role": "manager", "team_manager_email": "a@b.nl"}"#)
        #expect(manager == 201)
        #expect((managerAnswer["enrollment"] as? [String: Any])?["team_manager_email"] as? String == "a@b.nl")
    }

    @Test("Admin bodies of the wrong shape are 4xx JSON naming the field; a wrong method is 405")
    func adminBodies() async throws {
        let router = try Self.router(InMemoryEnrollmentStore())
        let cases: [(String, String, Int, String, String)] = [
            ("/admin/enrollments", "", 400, "body-empty", "empty"),
            ("/admin/enrollments", "{\"tenant_slug\":", 400, "body-not-json", "at byte"),
            ("/admin/enrollments", "[1]", 400, "body-not-object", "JSON array"),
            (
                "/admin/enrollments",
                #"{"tenant_slug": 5, "team_codes": ["A"], "role": "member", "hardware_identifier": "\#(BackendFixtures.phoneA)"}"#,
                400, "wrong-type", "tenant_slug is a JSON number"
            ),
            (
                "/admin/enrollments",
                #"{"tenant_slug": "x", "team_codes": "A", "role": "member", "hardware_identifier": "\#(BackendFixtures.phoneA)"}"#,
                400, "wrong-type", "team_codes is a JSON string; expected an array of strings"
            ),
            ("/admin/diensten/vvwilhelmus-jo11-3-1", #"{"volunteers": "Jan"}"#, 400, "wrong-type", "volunteers"),
            ("/admin/enrollments/import", "{}", 400, "enrollments-json-invalid", "the top level is an object"),
            (
                "/admin/enrollments/import",
                #"[{"device_id": "d", "tenant_slug": "t", "team_codes": [], "role": "member", "hardware_identifier": "h", "updated_at": "2027-01-15T09:30:00Z", "status": "weird"}]"#,
                400, "enrollments-json-invalid", "[0].status is \"weird\"; expected one of: active, revoked"
            ),
        ]
        for (target, body, status, code, words) in cases {
            let (s, answer) = await Self.post(router, target, body)
            #expect(s == status, "\(target) \(body)")
            #expect(Self.error(answer).code == code, "\(target) \(body)")
            #expect(Self.error(answer).message.contains(words), "\(Self.error(answer).message)")
        }
        let (s, answer) = await Self.post(router, "/admin/enrollments", "", method: "DELETE")
        #expect(
            s == 405 && Self.error(answer).code == "method-not-allowed"
                && Self.error(answer).message.contains("GET or POST"))
        #expect(await Self.post(router, "/nope", "").0 == 404)
    }

    @Test("One DecodingError message: entry index and field path, what was expected, the valid values of an enum")
    func decodingMessages() throws {
        func message(_ json: String) -> String {
            do {
                _ = try EnrollmentJSON.decode(Data(json.utf8), source: "The file x.json")
                return ""
            } catch {
                return (error as? KKPushError)?.message ?? "\(error)"
            }
        }
        let row =
            #""device_id": "d", "tenant_slug": "t", "team_codes": ["A"], "hardware_identifier": "h", "updated_at": "2027-01-15T09:30:00Z""#
        #expect(message("").contains("The file x.json is unusable: it is empty"))
        #expect(message("{}").contains("the top level is an object; expected a JSON array"))
        #expect(
            message("[{\(row), \"role\": \"boss\"}]").contains(#"[0].role is "boss"; expected one of: manager, member"#)
        )
        #expect(
            message("[{\(row), \"role\": \"member\", \"status\": 1}]").contains(
                "[0].status has the wrong type: expected a string, found a number"))
        #expect(message(#"[{"device_id": "d"}]"#).contains("[0].tenant_slug is missing"))
        #expect(message("[{\(row), \"role\": null}]").contains("[0].role is null"))
        #expect(message("[{\(row)").contains("it is not valid JSON"))
    }
}
