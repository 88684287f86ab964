import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Channel management and broadcast sends against the real mock (TLS, HTTP/2, curl as the client).
@Suite("Broadcast channels and broadcast sends")
struct MockBroadcastTests {
    static let bundle = Fixtures.topic
    static let laPayload = #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"score":"2-1"}}}"#

    /// A channel-management request with a provider token.
    static func manage(
        _ endpoint: APNsEndpoint, _ method: String, _ path: String, jwt: String?, headers: [String] = [],
        body: String? = nil
    ) -> CurlRequest {
        var h = headers
        if let jwt { h.append("authorization: bearer \(jwt)") }
        return CurlRequest(url: endpoint.baseURL + path, method: method, headers: h, body: body)
    }

    static func create(_ endpoint: APNsEndpoint, jwt: String, policy: Int = 0, bundle: String = bundle) -> CurlRequest {
        manage(
            endpoint, "POST", "/1/apps/\(bundle)/channels", jwt: jwt,
            body: #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#)
    }

    static func broadcast(
        _ endpoint: APNsEndpoint, channel: String?, jwt: String?, bundle: String = bundle,
        pushType: String? = "liveactivity",
        expiration: String? = "0", priority: String? = "10", body: String? = laPayload, extra: [String] = []
    ) -> CurlRequest {
        var h: [String] = extra
        if let jwt { h.append("authorization: bearer \(jwt)") }
        if let channel { h.append("apns-channel-id: \(channel)") }
        if let pushType { h.append("apns-push-type: \(pushType)") }
        if let expiration { h.append("apns-expiration: \(expiration)") }
        if let priority { h.append("apns-priority: \(priority)") }
        return CurlRequest(url: endpoint.baseURL + "/4/broadcasts/apps/\(bundle)", headers: h, body: body)
    }

    static func json(_ body: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }

    @Test("Lifecycle in both environments: create in sandbox, absent in production, read, list, delete")
    func lifecycle() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let sandbox = server.channelEndpoint(.sandbox)
            let production = server.channelEndpoint(.production)
            #expect(sandbox.port != production.port && sandbox.port != server.sandboxEndpoint.port)

            let created = try await Curl.one(Self.create(sandbox, jwt: jwt, policy: 1))
            #expect(created.status == 201)
            #expect(created.header("apns-request-id") != nil)
            let id = try #require(created.header("apns-channel-id"))
            #expect(Data(base64Encoded: id) != nil)

            let read = try await Curl.one(
                Self.manage(
                    sandbox, "GET", "/1/apps/\(Self.bundle)/channels", jwt: jwt, headers: ["apns-channel-id: \(id)"]))
            #expect(read.status == 200)
            #expect(Self.json(read.body)["message-storage-policy"] as? Int == 1)
            #expect(Self.json(read.body)["push-type"] as? String == "LiveActivity")

            // The other environment does not know it.
            let other = try await Curl.one(
                Self.manage(
                    production, "GET", "/1/apps/\(Self.bundle)/channels", jwt: jwt, headers: ["apns-channel-id: \(id)"])
            )
            #expect(other.status == 400 && other.reason == "ChannelNotRegistered")
            let otherList = try await Curl.one(
                Self.manage(production, "GET", "/1/apps/\(Self.bundle)/all-channels", jwt: jwt))
            #expect(otherList.status == 200 && (Self.json(otherList.body)["channels"] as? [String]) == [])

            let list = try await Curl.one(Self.manage(sandbox, "GET", "/1/apps/\(Self.bundle)/all-channels", jwt: jwt))
            #expect(list.status == 200 && (Self.json(list.body)["channels"] as? [String]) == [id])

            // A request id is echoed, lowercased.
            let requestID = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
            let deleted = try await Curl.one(
                Self.manage(
                    sandbox, "DELETE", "/1/apps/\(Self.bundle)/channels", jwt: jwt,
                    headers: ["apns-channel-id: \(id)", "apns-request-id: \(requestID)"]))
            #expect(deleted.status == 204)
            #expect(deleted.header("apns-request-id") == requestID.lowercased())
            let again = try await Curl.one(
                Self.manage(
                    sandbox, "DELETE", "/1/apps/\(Self.bundle)/channels", jwt: jwt, headers: ["apns-channel-id: \(id)"])
            )
            #expect(again.status == 400 && again.reason == "ChannelNotRegistered")
            let send = try await Curl.one(Self.broadcast(server.sandboxEndpoint, channel: id, jwt: jwt))
            #expect(send.status == 400 && send.reason == "ChannelNotRegistered")
        }
    }

    @Test("Every listed error reason of the management and broadcast endpoints")
    func reasons() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let m = server.channelEndpoint(.sandbox)
            let apns = server.sandboxEndpoint
            let id0 = try #require(try await Curl.one(Self.create(m, jwt: jwt, policy: 0)).header("apns-channel-id"))
            let path = "/1/apps/\(Self.bundle)/channels"
            let cases: [(CurlRequest, Int, String)] = [
                // Management.
                (Self.manage(m, "GET", path, jwt: jwt), 400, "MissingChannelId"),
                (Self.manage(m, "GET", path, jwt: jwt, headers: ["apns-channel-id: not*base64"]), 400, "BadChannelId"),
                (
                    Self.manage(m, "GET", path, jwt: jwt, headers: ["apns-channel-id: dHN0LXNyY2gtY2hubA=="]), 400,
                    "ChannelNotRegistered"
                ),
                (
                    Self.manage(
                        m, "POST", path, jwt: jwt, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#),
                    400, "BadRequestParams"
                ),
                (
                    Self.manage(m, "POST", path, jwt: jwt, body: #"{"message-storage-policy":0}"#), 400,
                    "BadRequestParams"
                ),
                (Self.create(m, jwt: jwt, bundle: Self.bundle + ".push-type.liveactivity"), 400, "TopicDisallowed"),
                (Self.manage(m, "PUT", path, jwt: jwt), 405, "MethodNotAllowed"),
                (Self.manage(m, "GET", "/1/apps/\(Self.bundle)/other", jwt: jwt), 404, "BadPath"),
                (Self.create(m, jwt: "not.a.token"), 403, "InvalidProviderToken"),
                (Self.manage(m, "GET", "/1/apps/\(Self.bundle)/all-channels", jwt: nil), 403, "MissingProviderToken"),
                (
                    Self.manage(
                        m, "GET", path, jwt: jwt, headers: ["apns-channel-id: \(id0)", "apns-request-id: nope"]), 400,
                    "BadMessageId"
                ),
                // Broadcast.
                (Self.broadcast(apns, channel: nil, jwt: jwt), 400, "MissingChannelId"),
                (Self.broadcast(apns, channel: "%%%", jwt: jwt), 400, "BadChannelId"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, pushType: nil), 400, "MissingPushType"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, pushType: "alert"), 400, "InvalidPushType"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, priority: "7"), 400, "BadPriority"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, expiration: "soon"), 400, "BadExpirationDate"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, expiration: "1900000000"), 400, "BadExpirationDate"),
                (
                    Self.broadcast(apns, channel: id0, jwt: jwt, bundle: Self.bundle + ".push-type.liveactivity"), 400,
                    "TopicDisallowed"
                ),
                (Self.broadcast(apns, channel: id0, jwt: jwt, body: ""), 400, "PayloadEmpty"),
                (Self.broadcast(apns, channel: id0, jwt: jwt, body: "[1]"), 400, "BadRequestPayload"),
                (
                    Self.broadcast(
                        apns, channel: id0, jwt: jwt,
                        body: #"{"aps":{"x":""# + String(repeating: "a", count: 5200) + #""}}"#), 413, "PayloadTooLarge"
                ),
                (Self.broadcast(apns, channel: id0, jwt: nil), 403, "MissingProviderToken"),
                (Self.broadcast(apns, channel: "dHN0LXNyY2gtY2hubA==", jwt: jwt), 400, "ChannelNotRegistered"),
                // The production APNs listener does not know a sandbox channel.
                (Self.broadcast(server.productionEndpoint, channel: id0, jwt: jwt), 400, "ChannelNotRegistered"),
            ]
            for (request, status, reason) in cases {
                let r = try await Curl.one(request)
                #expect(
                    r.status == status && r.reason == reason,
                    "\(request.method) \(request.url) \(request.headers.filter { !$0.hasPrefix("authorization") }): got \(r.status) \(r.reason ?? r.body)"
                )
                #expect(r.header("apns-request-id") != nil && r.header("apns-id") == nil)
            }
            // Authentication comes before channel validation: no token and no channel id → MissingProviderToken.
            let noAuth = try await Curl.one(Self.broadcast(apns, channel: nil, jwt: nil, pushType: nil))
            #expect(noAuth.reason == "MissingProviderToken")
            // The push type is compared case-insensitively.
            for spelling in ["Liveactivity", "LiveActivity", "LIVEACTIVITY"] {
                let r = try await Curl.one(Self.broadcast(apns, channel: id0, jwt: jwt, pushType: spelling))
                #expect(r.status == 200, "\(spelling)")
                #expect(r.header("apns-unique-id") == nil)
            }
        }
    }

    @Test("A broadcast reaches exactly the subscribed devices; policy 1 keeps the latest for a late subscriber")
    func delivery() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let admin = Admin(base: try #require(server.adminURL))
            var tokens: [String] = []
            for _ in 0..<3 {
                let d = try await admin.call(
                    "POST", "/devices", json: #"{"environment":"sandbox","topic":"\#(Self.bundle)"}"#)
                tokens.append(try #require(d.body["token"] as? String))
            }
            let prodDevice = try #require(
                try await admin.call(
                    "POST", "/devices", json: #"{"environment":"production","topic":"\#(Self.bundle)"}"#
                )
                .body["token"] as? String)
            let m = server.channelEndpoint(.sandbox)
            let id = try #require(try await Curl.one(Self.create(m, jwt: jwt, policy: 1)).header("apns-channel-id"))
            for t in tokens.prefix(2) {
                let r = try await admin.call(
                    "POST", "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/subscribers",
                    json: #"{"token":"\#(t)"}"#)
                #expect(r.status == 201)
            }
            // A production device cannot join a sandbox channel.
            let wrong = try await admin.call(
                "POST", "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/subscribers",
                json: #"{"token":"\#(prodDevice)"}"#)
            #expect(wrong.status == 409)

            let first = #"{"aps":{"timestamp":1,"event":"update","content-state":{"n":1}}}"#
            let latest = #"{"aps":{"timestamp":2,"event":"update","content-state":{"n":2}}}"#
            let r1 = try await Curl.one(Self.broadcast(server.sandboxEndpoint, channel: id, jwt: jwt, body: first))
            #expect(r1.status == 200)
            let r2 = try await Curl.one(Self.broadcast(server.sandboxEndpoint, channel: id, jwt: jwt, body: latest))
            #expect(r2.status == 200)
            let requestID = try #require(r2.header("apns-request-id"))

            let log = try await admin.call(
                "GET", "/log?channel_id=\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            let entries = try #require(log.body["notifications"] as? [[String: Any]])
            #expect(entries.count == 4)
            #expect(Set(entries.compactMap { $0["token"] as? String }) == Set(tokens.prefix(2)))
            #expect(
                entries.allSatisfy {
                    $0["push_type"] as? String == "liveactivity" && $0["topic"] as? String == Self.bundle
                })
            let third = try await admin.call("GET", "/log?token=\(tokens[2])")
            #expect((third.body["notifications"] as? [Any])?.isEmpty == true)

            // The late subscriber gets the latest message at once.
            let late = try await admin.call(
                "POST", "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/subscribers",
                json: #"{"token":"\#(tokens[2])"}"#)
            #expect(late.status == 201)
            let got = try #require(
                try await admin.call("GET", "/log?token=\(tokens[2])").body["notifications"] as? [[String: Any]])
            #expect(got.count == 1)
            #expect(got.first?["payload"] as? String == latest)
            #expect(got.first?["apns_id"] as? String == requestID)

            // After 8 hours the stored message is gone.
            clock.advance(by: 8 * 3600 + 1)
            let d4 = try #require(
                try await admin.call("POST", "/devices", json: #"{"environment":"sandbox","topic":"\#(Self.bundle)"}"#)
                    .body["token"] as? String)
            _ = try await admin.call(
                "POST", "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/subscribers",
                json: #"{"token":"\#(d4)"}"#)
            let none = try await admin.call("GET", "/log?token=\(d4)")
            #expect((none.body["notifications"] as? [Any])?.isEmpty == true)

            // GET /channels lists the channel with its subscribers; metrics count the deliveries.
            let channels = try #require(try await admin.call("GET", "/channels").body["channels"] as? [[String: Any]])
            #expect(channels.count == 1)
            #expect((channels.first?["subscribers"] as? [String])?.count == 4)
            let metrics = try await Curl.run("/usr/bin/curl", ["-sS", try #require(server.adminURL) + "/metrics"])
            #expect(metrics.stdout.contains(#"kkpush_mock_broadcast_deliveries_total{environment="sandbox"} 5"#))
            #expect(metrics.stdout.contains(#"operation="broadcast""#))
        }
    }

    @Test("A policy-1 message kept until a shorter apns-expiration")
    func expirationShortensStorage() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let admin = Admin(base: try #require(server.adminURL))
            let id = try #require(
                try await Curl.one(Self.create(server.channelEndpoint(.sandbox), jwt: jwt, policy: 1)).header(
                    "apns-channel-id"))
            let expiry = Int(clock.now().timeIntervalSince1970) + 60
            let r = try await Curl.one(
                Self.broadcast(server.sandboxEndpoint, channel: id, jwt: jwt, expiration: String(expiry)))
            #expect(r.status == 200)
            clock.advance(by: 120)
            let token = try #require(
                try await admin.call("POST", "/devices", json: #"{"environment":"sandbox","topic":"\#(Self.bundle)"}"#)
                    .body["token"] as? String)
            _ = try await admin.call(
                "POST", "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/subscribers",
                json: #"{"token":"\#(token)"}"#)
            #expect(
                (try await admin.call("GET", "/log?token=\(token)").body["notifications"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("The channel limit per app and environment (configured small): CannotCreateChannelConfig")
    func limit() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.maxChannelsPerApp = 3
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let m = server.channelEndpoint(.sandbox)
            let (responses, _) = try await Curl.send(Array(repeating: Self.create(m, jwt: jwt), count: 4))
            #expect(responses.map(\.status) == [201, 201, 201, 400])
            #expect(responses.last?.reason == "CannotCreateChannelConfig")
            // Another app and the other environment have their own count.
            #expect(try await Curl.one(Self.create(m, jwt: jwt, bundle: "nl.kantinekoning.other")).status == 201)
            #expect(try await Curl.one(Self.create(server.channelEndpoint(.production), jwt: jwt)).status == 201)
            // Deleting one makes room.
            let id = try #require(responses.first?.header("apns-channel-id"))
            let d = try await Curl.one(
                Self.manage(
                    m, "DELETE", "/1/apps/\(Self.bundle)/channels", jwt: jwt, headers: ["apns-channel-id: \(id)"]))
            #expect(d.status == 204)
            let again = try await Curl.one(Self.create(m, jwt: jwt))
            #expect(again.status == 201 && again.header("apns-channel-id") != id)
        }
    }

    @Test("Shared rules: create body, channel id, payload, suffix")
    func rules() {
        #expect(
            BroadcastRules.parseCreateBody(Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8))
                == .mostRecentMessageStored)
        #expect(
            BroadcastRules.parseCreateBody(Array(#"{"message-storage-policy":true,"push-type":"LiveActivity"}"#.utf8))
                == nil)
        #expect(BroadcastRules.checkChannelID("dHN0LXNyY2gtY2hubA==") == nil)
        #expect(BroadcastRules.checkChannelID("abc")?.reason == .badChannelId)
        #expect(BroadcastRules.checkChannelID(nil)?.reason == .missingChannelId)
        #expect(BroadcastRules.checkBundleID("nl.app.push-type.liveactivity")?.reason == .topicDisallowed)
        #expect(BroadcastRules.checkBundleID("nl.app") == nil)
        #expect(BroadcastRules.checkExpiration(5, policy: .noMessageStored)?.reason == .badExpirationDate)
        #expect(BroadcastRules.checkExpiration(5, policy: .mostRecentMessageStored) == nil)
        for reason in [
            APNsReason.missingChannelId, .badChannelId, .channelNotRegistered, .cannotCreateChannelConfig,
            .badExpirationDate, .topicDisallowed, .featureNotEnabled, .badRequestParams, .badRequestPayload,
            .missingPushType, .topicMismatch,
        ] {
            #expect(reason.isKnown && !reason.explanation.isEmpty && !reason.fix.isEmpty, "\(reason)")
        }
        #expect(APNsEndpoint.channelManagement(.sandbox).port == 2195)
        #expect(APNsEndpoint.channelManagement(.production).host == "api-manage-broadcast.push.apple.com")
    }
}
