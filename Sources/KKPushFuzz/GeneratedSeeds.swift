import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCore
import KantineKoning

/// The seeds that carry a signature made with the fixtures' keys and clock (`KKPushFuzz --write-seeds DIR`):
/// without a valid one, the fuzzer would rarely get past the signature check. The committed copies are
/// in `Tests/Fuzz/Corpus/`; this regenerates them (ECDSA signatures differ on every run).
enum GeneratedSeeds {
    static func write(to directory: String) throws -> Int {
        var count = 0
        for (target, seeds) in try all() {
            let folder = directory + "/" + target
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (name, bytes) in seeds {
                try Data(bytes).write(to: URL(fileURLWithPath: folder + "/" + name))
                count += 1
            }
        }
        return count
    }

    static func all() throws -> [(String, [(String, [UInt8])])] {
        let now = FuzzFixtures.now
        let key = FuzzFixtures.privateKey
        let other = try ES256PrivateKey(pem: FuzzFixtures.keyKKTEST0002)
        func provider(_ kid: String, _ iat: Date, _ key: ES256PrivateKey) throws -> [UInt8] {
            Array(try ProviderToken.sign(keyID: kid, teamID: FuzzFixtures.teamID, issuedAt: iat, key: key).utf8)
        }
        var derSigned = try String(
            decoding: provider(FuzzFixtures.keyID, now.addingTimeInterval(-60), key), as: UTF8.self)
        if let dot = derSigned.lastIndex(of: ".") {
            let signingInput = String(derSigned[..<dot])
            derSigned = signingInput + "." + Base64URL.encode(try key.derSignature(for: Array(signingInput.utf8)))
        }
        let providerTokens: [(String, [UInt8])] = [
            ("valid", try provider(FuzzFixtures.keyID, now.addingTimeInterval(-60), key)),
            ("expired", try provider(FuzzFixtures.keyID, now.addingTimeInterval(-7200), key)),
            ("future", try provider(FuzzFixtures.keyID, now.addingTimeInterval(3600), key)),
            ("other-key", try provider("KKTEST0002", now.addingTimeInterval(-60), other)),
            ("der-signature", Array(derSigned.utf8)),
            ("bearer-prefix", Array("bearer ".utf8) + (try provider(FuzzFixtures.keyID, now, key))),
        ]

        let jwt = BackendTargets.jwt
        let enrollments = FuzzFixtures.enrollments()
        let manager = try jwt.issue(for: enrollments[0])
        let member = try jwt.issue(for: enrollments[1])
        let revoked = try jwt.issue(for: enrollments[2])
        let expired = try jwt.sign(
            DeviceClaims(enrollment: enrollments[0], issuedAt: now.addingTimeInterval(-7200), lifetime: 3600))
        let deviceJWTs: [(String, [UInt8])] = [
            ("manager", Array(manager.utf8)), ("member", Array(member.utf8)), ("expired", Array(expired.utf8)),
        ]

        func request(_ line: String, _ bearer: String?, _ body: String = "") -> [UInt8] {
            Array("\(line)\n\(bearer.map { "Bearer " + $0 } ?? "")\n\(body)".utf8)
        }
        let update =
            #"{"token":"\#(FuzzFixtures.otherToken)","build_environment":"production","app_version":"1.4.2","hardware_identifier":"\#(FuzzFixtures.phoneA)","bundle_id":"nl.kantinekoning.app","platform":"ios","is_new_token":true}"#
        let backend: [(String, [UInt8])] = [
            ("token-update", request("POST /api/mobile/v1/device/apns-token", manager, update)),
            ("token-update-revoked", request("POST /api/mobile/v1/device/apns-token", revoked, update)),
            (
                "diensten",
                request("GET /api/mobile/v1/diensten?tenant=vvwilhelmus&past_days=30&future_days=10", manager)
            ),
            ("diensten-other-tenant", request("GET /api/mobile/v1/diensten?tenant=agovv", manager)),
            ("diensten-member", request("GET /api/mobile/v1/diensten?tenant=agovv&past_days=x", member)),
            (
                "enroll",
                request(
                    "POST /admin/enrollments", nil,
                    #"{"tenant_slug":"vvwilhelmus","team_codes":["JO11-3"],"role":"manager","hardware_identifier":"\#(FuzzFixtures.phoneA)","device_id":"dev-new","team_manager_email":"jan@example.nl"}"#
                )
            ),
            ("export", request("GET /admin/enrollments", nil)),
            (
                "import",
                request(
                    "POST /admin/enrollments/import", nil,
                    #"[{"device_id":"dev-x","tenant_slug":"agovv","team_codes":["JO10-5"],"role":"member","hardware_identifier":"\#(FuzzFixtures.phoneB)","apns_token":null,"build_environment":null,"app_version":null,"is_test_user":false,"status":"active","team_manager_email":null,"updated_at":"2027-01-15T08:00:00Z"}]"#
                )
            ),
            ("revoke", request("POST /admin/enrollments/vvwilhelmus/dev-manager/revoke", nil)),
            (
                "dienst-change",
                request(
                    "POST /admin/diensten/vvwilhelmus-jo11-3-5", nil,
                    #"{"volunteers":["Jan","Piet"],"start_time":"2027-01-18T09:00:00Z","end_time":"2027-01-18T12:00:00Z","location":"Veld 2","title":"Kantine"}"#
                )
            ),
            ("diensten-admin", request("GET /admin/diensten", nil)),
            ("healthz", request("GET /healthz", nil)),
            (
                "sync",
                request(
                    "POST /api/mobile/v1/enrollments/sync", manager,
                    #"{"enrollments":[{"tenant_slug":"vvwilhelmus","role":"manager","team_codes":["JO11-3"],"hardware_identifier":"\#(FuzzFixtures.phoneA)"}]}"#
                )
            ),
            (
                "sync-superseded",
                request(
                    "POST /api/mobile/v1/enrollments/sync", member,
                    #"{"enrollments":[{"tenant_slug":"agovv","role":"member","team_codes":["JO10-5"],"hardware_identifier":"\#(FuzzFixtures.phoneB)"}],"superseded_device_tokens":["\#(manager)"]}"#
                )
            ),
            (
                "sync-bad-entry",
                request(
                    "POST /api/mobile/v1/enrollments/sync", manager,
                    #"{"enrollments":[{"tenant_slug":"vvwilhelmus","role":"lid","team_codes":["JO11-3",5],"hardware_identifier":7},null]}"#
                )
            ),
            ("tenant-info", request("GET /api/mobile/v1/tenant?tenant=vvwilhelmus", manager)),
            (
                "tenant-change",
                request("POST /admin/tenants/agovv", nil, #"{"enrollment_open":false,"season_ended":true}"#)
            ),
        ]
        return [
            ("provider-token", providerTokens), ("device-jwt", deviceJWTs), ("backend", backend),
            ("mock-h2", try h2Seeds(bearer: String(decoding: providerTokens[0].1, as: UTF8.self))),
        ]
    }

    /// `mock-h2` inputs: a read size byte, then frames after the preface (SETTINGS, its ACK, requests with a
    /// valid provider token, resets, a PING, a WINDOW_UPDATE, a GOAWAY).
    static func h2Seeds(bearer: String) throws -> [(String, [UInt8])] {
        func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
            let n = payload.count
            return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags]
                + [
                    UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF),
                    UInt8(stream & 0xFF),
                ]
                + payload
        }
        /// An HPACK string literal (no Huffman): its length as a 7-bit-prefix integer, then the bytes.
        func string(_ s: String) -> [UInt8] {
            let bytes = Array(s.utf8)
            guard bytes.count >= 127 else { return [UInt8(bytes.count)] + bytes }
            var rest = bytes.count - 127
            var out: [UInt8] = [127]
            while rest >= 128 {
                out.append(UInt8(rest % 128 + 128))
                rest /= 128
            }
            return out + [UInt8(rest)] + bytes
        }
        func literal(_ name: String, _ value: String) -> [UInt8] { [0x00] + string(name) + string(value) }
        func request(_ stream: UInt32, token: String, body: String?, extra: [(String, String)] = []) -> [UInt8] {
            var block: [UInt8] = [0x83, 0x87]  // :method POST, :scheme https (static table)
            block += literal(":path", "/3/device/" + token) + literal(":authority", "api.sandbox.push.apple.com")
            block += literal("apns-topic", FuzzFixtures.bundleID) + literal("apns-push-type", "alert")
            block += literal("authorization", "bearer \(bearer)")
            for (name, value) in extra { block += literal(name, value) }
            guard let body else { return frame(0x1, 0x5, stream, block) }
            return frame(0x1, 0x4, stream, block) + frame(0x0, 0x1, stream, Array(body.utf8))
        }
        let settings = frame(0x4, 0, 0, [0, 3, 0, 0, 0, 100]) + frame(0x4, 0x1, 0, [])
        let payload = #"{"aps":{"alert":"Dienst gewijzigd"}}"#
        let token = FuzzFixtures.deviceToken
        let one = settings + request(1, token: token, body: payload)
        let many =
            settings + request(1, token: token, body: payload) + request(3, token: "abcd", body: payload)
            + request(5, token: token, body: nil) + frame(0x3, 0, 7, [0, 0, 0, 8])
            + frame(0x6, 0, 0, Array(repeating: 7, count: 8))
            + frame(0x8, 0, 0, [0, 0, 0x10, 0])
            + request(9, token: token, body: payload, extra: [("content-length", "3")])
        let goAway = settings + request(1, token: token, body: payload) + frame(0x7, 0, 0, [0, 0, 0, 1, 0, 0, 0, 0])
        return [
            ("request", [0xFF] + one), ("request-cut-small", [6] + one), ("many-frames", [0xFF] + many),
            ("many-frames-cut", [12] + many), ("goaway", [0xFF] + goAway),
        ]
    }
}
