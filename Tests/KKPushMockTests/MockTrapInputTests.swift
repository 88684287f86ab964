import Foundation
import KKPushAuth
import KKPushCore
import Testing

@testable import KKPushMock

/// Issue #15: what a peer sends or a config file holds never traps the mock.
@Suite("Mock: outside inputs never trap")
struct MockTrapInputTests {
    @Test(
        "The admin API's query parser keeps empty keys and values",
        arguments: [
            ("/health?=", ["": ""]), ("/log?=", ["": ""]), ("/health?&&", [:]), ("/health?==x", ["": "=x"]),
            ("/log?limit=&=5&token", ["limit": "", "": "5", "token": ""]), ("/health", [:]), ("/health?", [:]),
        ])
    func split(uri: String, expected: [String: String]) {
        let (path, query) = AdminHandler.split(uri)
        #expect(path == String(uri.prefix { $0 != "?" }))
        #expect(query == expected)
    }

    @Test(
        "A signed provider token with an iat out of range is InvalidProviderToken; the mock keeps serving",
        arguments: [Int.min, -9_223_372_036_854_775_000, Int.max, -1])
    func iatOutOfRange(iat: Int) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KKTEST0001"}"#.utf8))
            let claims = Base64URL.encode(Array(#"{"iss":"KKTEAM0001","iat":\#(iat)}"#.utf8))
            let signed = header + "." + claims
            let token =
                signed + "."
                + Base64URL.encode(try Fixtures.privateKey(Fixtures.bothKeyID).signature(for: Array(signed.utf8)))
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: token))
            #expect(r.status == 403)
            #expect(r.reason == "InvalidProviderToken")
            let good = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: Fixtures.randomToken(),
                    authorization: try Fixtures.token(issuedAt: clock.now())))
            #expect(good.status == 200)
        }
    }

    @Test(
        "idle_timeout_s and handshake_timeout outside 0.001...31536000 are refused at start",
        arguments: [Double.nan, .infinity, 1e300, 1e19, 0, -1])
    func timeouts(seconds: Double) async throws {
        for field in ["idle", "handshake"] {
            var configuration = Fixtures.configuration()
            if field == "idle" { configuration.idleTimeout = seconds } else { configuration.handshakeTimeout = seconds }
            #expect { try configuration.validate() } throws: { ($0 as? KKPushError)?.code.rawValue == "mock-timeout" }
        }
    }

    @Test(
        "unregistered_at_ms outside 1970...9999 is refused when decoded; dates print clamped, never trap",
        arguments: [Int64.max, Int64.min, -1, 253_402_300_800_000])
    func unregisteredAt(ms: Int64) throws {
        let json =
            #"{"token":"\#(String(repeating: "ab", count: 32))","environment":"sandbox","unregistered_at_ms":\#(ms)}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(MockDeviceRegistration.self, from: Data(json.utf8))
        }
        #expect(Date(timeIntervalSince1970: 1e300).millisecondsSince1970 == 253_402_300_799_999)
        #expect(Date(timeIntervalSince1970: -1e300).millisecondsSince1970 == 0)
        #expect(Date(timeIntervalSince1970: 1_700_000_000).millisecondsSince1970 == 1_700_000_000_000)
    }

    @Test("A config file's idle_timeout_s of 1e300 is refused by name")
    func configFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-mock-\(UUID()).json")
        try Data(#"{"idle_timeout_s": 1e300}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var configuration = Fixtures.configuration()
        // The file's values are checked as it is read, so the error names the file and the key.
        #expect { try configuration.apply(configFile: file.path) } throws: {
            ($0 as? KKPushError)?.code.rawValue == "mock-config-invalid"
                && ($0 as? KKPushError)?.message.contains("idle_timeout_s") == true
        }
    }
}
