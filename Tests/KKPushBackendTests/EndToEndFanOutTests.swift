import Foundation
import KKPushAuth
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushStore
import KantineKoning
import Testing

/// The whole path: enrollments and token updates over HTTP, an admin dienst change, the fan-out through
/// the real APNs client (libcurl, HTTP/2, TLS) to the real mock server on loopback.
@Suite("Dienst-update fan-out end to end")
struct EndToEndFanOutTests {
    static func mockConfiguration() -> MockServerConfiguration {
        var c = MockServerConfiguration.forTests()
        c.certificatesDirectory = BackendFixtures.certificates
        c.strictDeviceTokens = true
        return c
    }

    static func clientConfiguration(_ server: MockAPNsServer) throws -> APNsClientConfiguration {
        let key = try ES256PrivateKey(contentsOfFile: BackendFixtures.certificates + "/AuthKey_KKTEST0001.p8")
        let cache = ProviderTokenCache(key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001")
        return APNsClientConfiguration(
            credential: .token(cache), sandboxEndpoint: server.sandboxEndpoint,
            productionEndpoint: server.productionEndpoint,
            connectTimeout: .seconds(30), requestTimeout: .seconds(60))
    }

    static func tokenUpdate(_ backend: SimulatedBackend, jwt: String, token: String, build: String, phone: String)
        async throws
    {
        let body = try TokenUpdate(
            token: token, buildEnvironment: build, appVersion: "1.4.2", hardwareIdentifier: phone
        ).jsonData()
        let r = try await HTTP.request("POST", backend.baseURL + TokenUpdate.path, bearer: jwt, body: body)
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
    }

    @Test("One push per phone, each in its environment; a 410 clears the token from all its enrollments")
    func onePushPerDevice() async throws {
        try await withMockServer(configuration: Self.mockConfiguration()) { mock in
            let phoneA = mock.mintDevice(environment: .production, topic: BackendFixtures.bundleID)
            let phoneB = mock.mintDevice(environment: .sandbox, topic: BackendFixtures.bundleID)
            try await withAPNsClient(configuration: try Self.clientConfiguration(mock)) { client in
                let config = SimulatedBackendConfiguration(port: 0, secret: BackendFixtures.secret)
                try await withSimulatedBackend(configuration: config, sender: APNsClientPushSender(client: client)) {
                    backend in
                    // Phone A: manager of JO11-3 and JO11-5, and a member enrollment that also follows JO11-3,
                    // and an AGOVV enrollment. Phone B: member of JO11-3 on a Release Testing build.
                    let (_, aManager) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "vvwilhelmus",
                        teams: ["JO11-3", "JO11-5"], role: "manager", phone: BackendFixtures.phoneA,
                        email: "jan@example.nl")
                    let (_, aMember) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "vvwilhelmus",
                        teams: ["JO11-3", "JO13-1"], phone: BackendFixtures.phoneA)
                    let (_, aAgovv) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "agovv", teams: ["JO10-5"],
                        phone: BackendFixtures.phoneA)
                    let (_, bMember) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "vvwilhelmus", teams: ["JO11-3"],
                        phone: BackendFixtures.phoneB)
                    // The app sends its token to every enrollment, each with its own JWT.
                    for jwt in [aManager, aMember, aAgovv] {
                        try await Self.tokenUpdate(
                            backend, jwt: jwt, token: phoneA.token, build: "production", phone: BackendFixtures.phoneA)
                    }
                    try await Self.tokenUpdate(
                        backend, jwt: bMember, token: phoneB.token, build: "development", phone: BackendFixtures.phoneB)

                    let change = try await HTTP.request(
                        "POST", backend.baseURL + "/admin/diensten/vvwilhelmus-jo11-3-5",
                        json: ["volunteers": ["Jan", "Piet"]])
                    #expect(change.status == 200, "\(String(decoding: change.body, as: UTF8.self))")
                    let fanOut = try #require(change.json["fan_out"] as? [String: Any])
                    #expect(fanOut["enrollments"] as? Int == 3)
                    #expect(fanOut["pushes"] as? Int == 2)
                    #expect(fanOut["accepted"] as? Int == 2)
                    #expect(((change.json["dienst"] as? [String: Any])?["volunteers"] as? [String]) == ["Jan", "Piet"])

                    // The mock got exactly one push per phone, in the phone's own environment.
                    let toA = mock.deliveries(token: phoneA.token)
                    let toB = mock.deliveries(token: phoneB.token)
                    #expect(toA.count == 1 && toA.first?.environment == .production)
                    #expect(toB.count == 1 && toB.first?.environment == .sandbox)
                    #expect(toA.first?.pushType == "background" && toA.first?.priority == 5)
                    #expect(
                        KantineKoningPush.parse(Array((toA.first?.payload ?? "").utf8))
                            == .dienstUpdate(tenant: "vvwilhelmus", dienstID: "vvwilhelmus-jo11-3-5"))

                    // Phone A uninstalls the app: APNs answers 410, and its token leaves every enrollment.
                    try mock.unregister(token: phoneA.token)
                    let again = try await HTTP.request(
                        "POST", backend.baseURL + "/admin/diensten/vvwilhelmus-jo11-3-5",
                        json: ["location": "Kantine 2"])
                    let fanOut2 = try #require(again.json["fan_out"] as? [String: Any])
                    let deliveries = try #require(fanOut2["deliveries"] as? [[String: Any]])
                    let a = try #require(deliveries.first { $0["token"] as? String == phoneA.token })
                    #expect(
                        a["result"] as? String == "rejected" && a["status"] as? Int == 410
                            && a["reason"] as? String == "Unregistered")
                    #expect(a["cleared_enrollments"] as? Int == 3)
                    let exported = try EnrollmentJSON.decode(
                        try await HTTP.request("GET", backend.baseURL + "/admin/enrollments").body)
                    #expect(
                        exported.filter { $0.hardwareIdentifier == BackendFixtures.phoneA }.allSatisfy {
                            $0.apnsToken == nil
                        })
                    #expect(
                        exported.first { $0.hardwareIdentifier == BackendFixtures.phoneB }?.apnsToken == phoneB.token)
                }
            }
        }
    }

    @Test("APNS_FORCE_ENV=production sends the sandbox phone's push to production: BadDeviceToken")
    func forcedEnvironment() async throws {
        try await withMockServer(configuration: Self.mockConfiguration()) { mock in
            let phoneB = mock.mintDevice(environment: .sandbox, topic: BackendFixtures.bundleID)
            try await withAPNsClient(configuration: try Self.clientConfiguration(mock)) { client in
                let config = SimulatedBackendConfiguration(
                    port: 0, secret: BackendFixtures.secret,
                    settings: ServerAPNsSettings(forceEnv: "production"))
                try await withSimulatedBackend(configuration: config, sender: APNsClientPushSender(client: client)) {
                    backend in
                    let (_, jwt) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "agovv", teams: ["JO10-5"],
                        phone: BackendFixtures.phoneB)
                    try await Self.tokenUpdate(
                        backend, jwt: jwt, token: phoneB.token, build: "development", phone: BackendFixtures.phoneB)
                    let change = try await HTTP.request(
                        "POST", backend.baseURL + "/admin/diensten/agovv-jo10-5-6", json: [:])
                    let fanOut = try #require(change.json["fan_out"] as? [String: Any])
                    let delivery = try #require((fanOut["deliveries"] as? [[String: Any]])?.first)
                    #expect(delivery["environment"] as? String == "production")
                    #expect(delivery["reason"] as? String == "BadDeviceToken")
                    let problems = ((delivery["problems"] as? [[String: Any]]) ?? []).compactMap {
                        $0["code"] as? String
                    }
                    #expect(problems.contains("force-env-override"))
                    #expect(mock.deliveries(token: phoneB.token).isEmpty)
                }
            }
        }
    }
}
