import Foundation
import KKPushAuth
import KKPushCore
import KKPushMock
import Testing

@Suite("Provider-token authentication")
struct MockAuthenticationTests {
    @Test("MissingProviderToken: no header, empty, not bearer", arguments: [nil, "", "basic abc"] as [String?])
    func missing(header: String?) async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            var request = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil)
            if let header { request.headers.append("authorization: \(header)") }
            let r = try await Curl.one(request)
            #expect(r.status == 403)
            #expect(r.reason == "MissingProviderToken")
        }
    }

    @Test("InvalidProviderToken: garbage, unknown key, wrong team, altered signature, string iat")
    func invalid() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let now = clock.now()
            let good = try Fixtures.token(issuedAt: now)
            var altered = Array(good)
            altered[altered.count - 3] = altered[altered.count - 3] == "A" ? "B" : "A"
            let unknownKey = try ProviderToken.sign(
                keyID: "NOSUCHKEY1", teamID: Fixtures.teamID, issuedAt: now,
                key: Fixtures.privateKey(Fixtures.bothKeyID))
            let wrongTeam = try Fixtures.token(teamID: "OTHERTEAM1", issuedAt: now)
            let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KKTEST0001"}"#.utf8))
            let claims = Base64URL.encode(
                Array(#"{"iss":"KKTEAM0001","iat":"\#(Int(now.timeIntervalSince1970))"}"#.utf8))
            let signed = header + "." + claims
            let stringIat =
                signed + "."
                + Base64URL.encode(try Fixtures.privateKey(Fixtures.bothKeyID).signature(for: Array(signed.utf8)))
            for token in ["not.a.jwt", "abc", unknownKey, wrongTeam, String(altered), stringIat] {
                let r = try await Curl.one(
                    Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: token))
                #expect(r.status == 403, "token \(token.prefix(12))…")
                #expect(r.reason == "InvalidProviderToken", "token \(token.prefix(12))…")
            }
            #expect(server.deliveries().isEmpty)
        }
    }

    @Test("ExpiredProviderToken after one hour by the mock's clock, also for a cached token")
    func expired() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let push = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt)
            #expect(try await Curl.one(push).status == 200)
            clock.advance(by: 3599)
            #expect(try await Curl.one(push).status == 200)
            clock.advance(by: 2)
            let r = try await Curl.one(push)
            #expect(r.status == 403)
            #expect(r.reason == "ExpiredProviderToken")
            // An old token on a fresh connection, and the clock moved through the server's API.
            server.reset()
            let old = try Fixtures.token(issuedAt: clock.now().addingTimeInterval(-1800))
            let push2 = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: old)
            #expect(try await Curl.one(push2).status == 200)
            server.advanceClock(by: 1801)
            #expect(try await Curl.one(push2).reason == "ExpiredProviderToken")
        }
    }

    @Test("TooManyProviderTokenUpdates: a new token within 20 minutes on one connection")
    func tooManyUpdates() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let first = try Fixtures.token(issuedAt: clock.now().addingTimeInterval(-10))
            let second = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: token, authorization: first),
                Curl.push(server.sandboxEndpoint, token: token, authorization: first),
                Curl.push(server.sandboxEndpoint, token: token, authorization: second),
                Curl.push(server.sandboxEndpoint, token: token, authorization: first),
            ])
            #expect(responses.map(\.status) == [200, 200, 429, 200])
            #expect(responses[2].reason == "TooManyProviderTokenUpdates")
            #expect(responses.filter(\.newConnection).count == 1)
            // A new connection may use the second token at once.
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: second)).status == 200
            )
        }
    }

    @Test(
        "A new token is allowed 20 minutes after the connection first used the previous one",
        arguments: [
            (1199.0, 429), (1201.0, 200),
        ])
    func tokenUpdateWindow(advance: Double, status: Int) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = try #require(server.adminURL)
            let first = try Fixtures.token(issuedAt: clock.now())
            let second = try Fixtures.token(issuedAt: clock.now().addingTimeInterval(advance))
            let token = Fixtures.randomToken()
            // One curl process: the push connection stays open while the admin API moves the clock.
            let moveClock = CurlRequest(
                url: admin + "/clock", headers: ["content-type: application/json"],
                body: #"{"advance_seconds":\#(advance)}"#, extra: ["--http1.1"])
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: token, authorization: first),
                moveClock,
                Curl.push(server.sandboxEndpoint, token: token, authorization: second),
            ])
            #expect(responses.count == 3)
            #expect(responses[0].status == 200)
            #expect(responses[1].status == 200)
            #expect(responses[2].status == status)
            #expect(responses[2].newConnection == false)
            if status == 429 { #expect(responses[2].reason == "TooManyProviderTokenUpdates") }
        }
    }

    @Test("UnrelatedKeyIdInToken: another key on the same connection")
    func unrelatedKey() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let a = try Fixtures.token(keyID: Fixtures.bothKeyID, issuedAt: clock.now())
            let b = try Fixtures.token(keyID: Fixtures.sandboxOnlyKeyID, issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: token, authorization: a),
                Curl.push(server.sandboxEndpoint, token: token, authorization: b),
            ])
            #expect(responses.map(\.status) == [200, 403])
            #expect(responses.last?.reason == "UnrelatedKeyIdInToken")
        }
    }

    @Test("BadEnvironmentKeyIdInToken: a sandbox-only key on production")
    func keyEnvironment() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(keyID: Fixtures.sandboxOnlyKeyID, issuedAt: clock.now())
            let production = try await Curl.one(
                Curl.push(server.productionEndpoint, token: Fixtures.randomToken(), authorization: jwt))
            #expect(production.status == 403)
            #expect(production.reason == "BadEnvironmentKeyIdInToken")
            let sandbox = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
            #expect(sandbox.status == 200)
        }
    }

    @Test("Keys registered at run time; bad key PEM is an error naming the key")
    func registerKey() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.registerDefaultKeys = false
        try await withMockServer(configuration: configuration) { server in
            #expect(server.keys.isEmpty)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let push = Curl.push(server.productionEndpoint, token: Fixtures.randomToken(), authorization: jwt)
            #expect(try await Curl.one(push).reason == "InvalidProviderToken")
            let pem = try String(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"), encoding: .utf8)
            try server.registerKey(MockKey(teamID: Fixtures.teamID, keyID: Fixtures.bothKeyID, pem: pem))
            #expect(try await Curl.one(push).status == 200)
            let error = #expect(throws: KKPushError.self) {
                try server.registerKey(MockKey(teamID: "T", keyID: "BROKENKEY1", pem: "nonsense"))
            }
            #expect(error?.message.contains("BROKENKEY1") == true)
        }
    }

    @Test(
        "One stream until the first valid token, then MAX_CONCURRENT_STREAMS is raised (seen with nghttp)")
    func oneStreamUntilAuth() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.oneStreamUntilAuthenticated = true
        configuration.maxConcurrentStreams = 777
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let payload = FileManager.default.temporaryDirectory.appendingPathComponent(
                "kkpush-mock-\(UUID().uuidString).json")
            try Data(Fixtures.payload.utf8).write(to: payload)
            defer { try? FileManager.default.removeItem(at: payload) }
            let url = server.sandboxEndpoint.deviceURL(token: Fixtures.randomToken())
            let url2 = server.sandboxEndpoint.deviceURL(token: Fixtures.randomToken())
            let result = try await Curl.run(
                "/usr/bin/nghttp",
                [
                    "-nv", "-d", payload.path, "-H", "authorization: bearer \(jwt)", "-H",
                    "apns-topic: \(Fixtures.topic)",
                    "-H", "apns-push-type: alert", url, url2,
                ],
                timeout: 20)
            let out = result.stdout
            let first = try #require(out.range(of: "SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"))
            let raised = try #require(out.range(of: "SETTINGS_MAX_CONCURRENT_STREAMS(0x03):777]"))
            #expect(first.lowerBound < raised.lowerBound)
            #expect(out.components(separatedBy: ":status: 200").count - 1 == 2)
        }
    }
}
