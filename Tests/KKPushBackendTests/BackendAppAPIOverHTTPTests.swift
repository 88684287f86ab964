import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

@Suite("Simulated backend over HTTP")
struct BackendAppAPIOverHTTPTests {
    static func configuration(
        _ clock: ManualWallClock, settings: ServerAPNsSettings = ServerAPNsSettings(),
        lifetime: TimeInterval = DeviceJWT.defaultLifetime
    ) -> SimulatedBackendConfiguration {
        SimulatedBackendConfiguration(
            port: 0, secret: BackendFixtures.secret, settings: settings, jwtLifetime: lifetime, clock: clock)
    }

    /// Enrolls through the admin API; returns (device_id, JWT).
    static func enroll(
        _ backend: SimulatedBackend, tenant: String, teams: [String], role: String = "member",
        phone: String = BackendFixtures.phoneA, deviceID: String? = nil, email: String? = nil
    ) async throws -> (String, String) {
        var body: [String: Any] = [
            "tenant_slug": tenant, "team_codes": teams, "role": role, "hardware_identifier": phone,
        ]
        if let deviceID { body["device_id"] = deviceID }
        if let email { body["team_manager_email"] = email }
        let r = try await HTTP.request("POST", backend.baseURL + "/admin/enrollments", json: body)
        #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
        let enrollment = try #require(r.json["enrollment"] as? [String: Any])
        return (
            try #require(enrollment["device_id"] as? String), try #require(r.json["signed_device_token"] as? String)
        )
    }

    static func dienstIDs(_ r: HTTP.Response) -> [String] {
        ((r.json["diensten"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    @Test("Diensten are filtered to the JWT's team codes and windowed by past_days/future_days")
    func teamFilteringAndWindows() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await withSimulatedBackend(configuration: Self.configuration(clock)) { backend in
            let (_, jwt) = try await Self.enroll(
                backend, tenant: "vvwilhelmus", teams: ["JO11-3", "JO11-5"], role: "manager",
                email: "jan@example.nl")
            let url = backend.baseURL + "/api/mobile/v1/diensten?tenant=vvwilhelmus"

            let standard = try await HTTP.request("GET", url, bearer: jwt)
            #expect(standard.status == 200)
            let ids = Self.dienstIDs(standard)
            // Seed offsets -400, -200, -30, -1, +3, +14, +45, +90 days: the default 365/60 window keeps six per team.
            #expect(ids.count == 12)
            #expect(ids.allSatisfy { $0.hasPrefix("vvwilhelmus-jo11-3-") || $0.hasPrefix("vvwilhelmus-jo11-5-") })
            #expect(!ids.contains("vvwilhelmus-jo11-3-1") && !ids.contains("vvwilhelmus-jo11-3-8"))
            let window = try #require(standard.json["window"] as? [String: Any])
            #expect(window["past_days"] as? Int == 365 && window["future_days"] as? Int == 60)

            let wide = try await HTTP.request("GET", url + "&past_days=500&future_days=100", bearer: jwt)
            #expect(Self.dienstIDs(wide).count == 16)
            let narrow = try await HTTP.request("GET", url + "&past_days=2&future_days=4", bearer: jwt)
            #expect(
                Set(Self.dienstIDs(narrow)) == [
                    "vvwilhelmus-jo11-3-4", "vvwilhelmus-jo11-3-5", "vvwilhelmus-jo11-5-4", "vvwilhelmus-jo11-5-5",
                ])

            // Time moves: the window moves with the clock.
            clock.advance(by: 6 * 86_400)
            let moved = try await HTTP.request("GET", url + "&past_days=2&future_days=4", bearer: jwt)
            #expect(Self.dienstIDs(moved).isEmpty)

            let bad = try await HTTP.request("GET", url + "&past_days=abc", bearer: jwt)
            #expect(bad.status == 400 && bad.errorCode == "invalid-past-days")
            let negative = try await HTTP.request("GET", url + "&future_days=-1", bearer: jwt)
            #expect(negative.status == 400 && negative.errorCode == "invalid-future-days")
            let noTenant = try await HTTP.request("GET", backend.baseURL + "/api/mobile/v1/diensten", bearer: jwt)
            #expect(noTenant.status == 400 && noTenant.errorCode == "missing-tenant")
        }
    }

    @Test("Another tenant's JWT gets 403; missing, malformed, forged and expired JWTs get 401; revoked 403")
    func authorization() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await withSimulatedBackend(configuration: Self.configuration(clock, lifetime: 86_400)) { backend in
            let (_, agovv) = try await Self.enroll(backend, tenant: "agovv", teams: ["JO10-5"])
            let (wilhelmusDevice, wilhelmus) = try await Self.enroll(backend, tenant: "vvwilhelmus", teams: ["JO13-1"])
            let url = backend.baseURL + "/api/mobile/v1/diensten?tenant=vvwilhelmus"

            // The README's mistake: the first tenant's ("primary") token for another tenant.
            let other = try await HTTP.request("GET", url, bearer: agovv)
            #expect(other.status == 403 && other.errorCode == "jwt-wrong-tenant")
            #expect(((other.json["error"] as? [String: Any])?["fix"] as? String)?.contains("signedDeviceToken") == true)
            let own = try await HTTP.request(
                "GET", backend.baseURL + "/api/mobile/v1/diensten?tenant=agovv", bearer: agovv)
            #expect(
                own.status == 200 && Self.dienstIDs(own).allSatisfy { $0.hasPrefix("agovv-jo10-5-") }
                    && Self.dienstIDs(own).count == 6)

            let none = try await HTTP.request("GET", url)
            #expect(none.status == 401 && none.errorCode == "jwt-missing")
            let garbage = try await HTTP.request("GET", url, bearer: "not-a-jwt")
            #expect(garbage.status == 401 && garbage.errorCode == "jwt-malformed")
            let forgedSigner = try DeviceJWT(secret: "some-other-backend-secret", clock: clock)
            let forged = try forgedSigner.sign(try backend.jwt.verify(wilhelmus))
            let forgedResponse = try await HTTP.request("GET", url, bearer: forged)
            #expect(forgedResponse.status == 401 && forgedResponse.errorCode == "jwt-bad-signature")

            #expect(try await HTTP.request("GET", url, bearer: wilhelmus).status == 200)
            clock.advance(by: 86_400 + 120)
            let expired = try await HTTP.request("GET", url, bearer: wilhelmus)
            #expect(expired.status == 401 && expired.errorCode == "jwt-expired")

            clock.advance(by: -(86_400 + 120))
            let revoke = try await HTTP.request(
                "POST", backend.baseURL + "/admin/enrollments/vvwilhelmus/\(wilhelmusDevice)/revoke")
            #expect(revoke.status == 200)
            let revoked = try await HTTP.request("GET", url, bearer: wilhelmus)
            #expect(revoked.status == 403 && revoked.errorCode == "enrollment-revoked")
        }
    }

    @Test("The token update replaces the enrollment's token; broken updates get 422 with every problem")
    func tokenUpdate() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store: any EnrollmentStore = InMemoryEnrollmentStore()
        try await withSimulatedBackend(configuration: Self.configuration(clock), store: store) { backend in
            let (device, jwt) = try await Self.enroll(backend, tenant: "vvwilhelmus", teams: ["JO11-3"])
            let url = backend.baseURL + TokenUpdate.path
            let first = TokenUpdate(
                token: BackendFixtures.token(1), buildEnvironment: "development", appVersion: "1.4.2",
                hardwareIdentifier: BackendFixtures.phoneA, isNewToken: true)
            let r1 = try await HTTP.request("POST", url, bearer: jwt, body: try first.jsonData())
            #expect(r1.status == 200)
            #expect(r1.json["apns_environment"] as? String == "sandbox")
            #expect(r1.json["replaced_token"] as? Bool == false)
            let stored = try #require(try await store.get(deviceID: device, tenant: "vvwilhelmus"))
            #expect(
                stored.apnsToken == BackendFixtures.token(1) && stored.buildEnvironment == "development"
                    && stored.appVersion == "1.4.2")

            clock.advance(by: 60)
            var second = first
            second.token = BackendFixtures.token(2)
            let r2 = try await HTTP.request("POST", url, bearer: jwt, body: try second.jsonData())
            #expect(r2.status == 200 && r2.json["replaced_token"] as? Bool == true)
            let replaced = try #require(try await store.get(deviceID: device, tenant: "vvwilhelmus"))
            #expect(replaced.apnsToken == BackendFixtures.token(2) && replaced.updatedAt == clock.now())

            // The same token reported as production contradicts what the enrollment registered.
            var flipped = second
            flipped.buildEnvironment = "production"
            let r3 = try await HTTP.request("POST", url, bearer: jwt, body: try flipped.jsonData())
            #expect(r3.status == 422 && r3.errorCode == "build-environment-contradicts-token")

            let broken = TokenUpdateCase.named("description-brackets-and-spaces").data()
            let r4 = try await HTTP.request("POST", url, bearer: jwt, body: broken)
            #expect(r4.status == 422)
            let codes = ((r4.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(codes.contains("token-description-form"))
            #expect(try await store.get(deviceID: device, tenant: "vvwilhelmus")?.apnsToken == BackendFixtures.token(2))

            let anonymous = try await HTTP.request("POST", url, body: try first.jsonData())
            #expect(anonymous.status == 401)
        }
    }

    @Test("Admin input is checked and unknown routes are 404")
    func adminChecks() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await withSimulatedBackend(configuration: Self.configuration(clock)) { backend in
            let bad = try await HTTP.request(
                "POST", backend.baseURL + "/admin/enrollments",
                json: ["tenant_slug": "agovv", "team_codes": ["JO10-5"], "role": "boss", "hardware_identifier": "x"])
            #expect(bad.status == 422)
            let codes = ((bad.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(Set(codes).isSuperset(of: ["invalid-role", "hardware-identifier-not-uuid"]))
            let long = try await HTTP.request(
                "POST", backend.baseURL + "/admin/diensten/agovv-jo10-5-5",
                json: ["volunteers": ["Jan", "jan", "Maximiliaan van Oranje"]])
            #expect(long.status == 422)
            let dcodes = ((long.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(Set(dcodes) == ["volunteer-duplicate", "volunteer-name-too-long"])
            #expect(try await HTTP.request("GET", backend.baseURL + "/nope").status == 404)
            #expect(
                try await HTTP.request("POST", backend.baseURL + "/admin/diensten/missing", json: [:]).status == 404)
        }
    }

    @Test("With an admin token, the admin API refuses requests without it")
    func adminToken() async throws {
        var configuration = Self.configuration(ManualWallClock())
        configuration.adminToken = "admin-token-for-tests"
        try await withSimulatedBackend(configuration: configuration) { backend in
            let denied = try await HTTP.request("GET", backend.baseURL + "/admin/enrollments")
            #expect(denied.status == 401 && denied.errorCode == "admin-unauthorized")
            let allowed = try await HTTP.request(
                "GET", backend.baseURL + "/admin/enrollments", bearer: "admin-token-for-tests")
            #expect(allowed.status == 200)
        }
    }

    @Test(
        "Admin requests with an Origin header (a web page) are refused with 403, token or not; the app API is not affected"
    )
    func adminOriginRefused() async throws {
        try await withSimulatedBackend(configuration: Self.configuration(ManualWallClock())) { backend in
            let page = try await HTTP.request(
                "POST", backend.baseURL + "/admin/enrollments", json: ["tenant_slug": "vvwilhelmus"],
                headers: ["Origin": "http://evil.example"])
            #expect(page.status == 403 && page.errorCode == "admin-origin")
            let list = try await HTTP.request(
                "GET", backend.baseURL + "/admin/enrollments", headers: ["Origin": "null"])
            #expect(list.status == 403)
            #expect(try await HTTP.request("GET", backend.baseURL + "/admin/enrollments").status == 200)
            // The app API is called by apps, not pages: an Origin changes nothing there.
            let health = try await HTTP.request(
                "GET", backend.baseURL + "/healthz", headers: ["Origin": "http://evil.example"])
            #expect(health.status == 200)
        }
        var configuration = Self.configuration(ManualWallClock())
        configuration.adminToken = "admin-token-for-tests"
        try await withSimulatedBackend(configuration: configuration) { backend in
            let page = try await HTTP.request(
                "GET", backend.baseURL + "/admin/enrollments", bearer: "admin-token-for-tests",
                headers: ["Origin": "http://evil.example"])
            #expect(page.status == 403)
        }
    }
}
