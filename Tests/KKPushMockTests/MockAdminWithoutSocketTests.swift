import Foundation
import KKPushCore
import KKPushMock
import Testing

/// The admin API through ``MockAdminExchange``: the server's pipeline on an in-memory channel, no socket.
@Suite("The admin API without a socket")
struct MockAdminWithoutSocketTests {
    static let token = String(repeating: "ab", count: 32)

    static func exchange() throws -> MockAdminExchange {
        var configuration = MockServerConfiguration()
        configuration.clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        configuration.devices = [
            MockDeviceRegistration(token: token, environment: .sandbox, topic: "nl.kantinekoning.app")
        ]
        return try MockAdminExchange(configuration: configuration)
    }

    static func json(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    @Test("answers as the admin server does: routes, query strings, bodies, errors")
    func answers() async throws {
        let admin = try Self.exchange()
        let health = await admin.respond(method: "GET", uri: "/health")
        #expect(health.status == 200)
        #expect(Self.json(health.body)["now_ms"] as? Int == 1_800_000_000_000)

        let minted = await admin.respond(
            method: "POST", uri: "/devices", body: Array(#"{"environment":"sandbox","topic":"x"}"#.utf8))
        #expect(minted.status == 201)
        #expect((Self.json(minted.body)["token"] as? String)?.count == 64)

        let gone = await admin.respond(method: "DELETE", uri: "/devices/\(Self.token)?timestamp_ms=1790000000000")
        #expect(gone.status == 200)
        #expect(Self.json(gone.body)["unregistered_at_ms"] as? Int == 1_790_000_000_000)

        #expect(await admin.respond(method: "GET", uri: "/log?limit=abc").status == 400)
        #expect(await admin.respond(method: "GET", uri: "/nothing").status == 404)
        #expect(await admin.respond(method: "PUT", uri: "/reset").status == 405)
        #expect(await admin.respond(method: "POST", uri: "/clock", body: Array("{}".utf8)).status == 400)
    }

    @Test("a long poll is answered at once, with nothing new")
    func longPoll() async throws {
        let answer = try await Self.exchange().respond(
            method: "GET", uri: "/devices/\(Self.token)/notifications?after=0&wait_ms=60000")
        #expect(answer.status == 200)
        #expect((Self.json(answer.body)["notifications"] as? [Any])?.isEmpty == true)
    }

    @Test("a request the HTTP codec refuses gets its 400, raw bytes in and out")
    func badRequest() async throws {
        let answer = try await Self.exchange().respond(
            to: Array("GET /health HTTP/1.1\r\ncontent-length: x\r\n\r\n".utf8))
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 400"))
    }

    /// Found by the fuzz target `mock-admin`: a query pair that is only `=` (`/log?&&=&&`) trapped the
    /// admin handler (the split dropped both empty halves and the key was read from an empty array).
    @Test(
        "a query pair without key and value is ignored, not trapped on",
        arguments: [
            "/log?apns_id=ab&&&&=&&&&token=b3&limit=10", "/log?=", "/log?=5&limit=2",
            "/devices/x/notifications?=&after=0",
        ])
    func emptyQueryPair(uri: String) async throws {
        let answer = try await Self.exchange().respond(method: "GET", uri: uri)
        #expect(answer.status == 200)
    }

    /// Found by reading the code while writing the `mock-admin` target (the fuzzer had not hit it in 1.2
    /// million runs): a timestamp_ms past the year 9999 was stored, and writing the device back as JSON
    /// (milliseconds as Int64) trapped the admin handler.
    @Test(
        "an unregister timestamp outside 1970...9999 is refused, not trapped on",
        arguments: [
            "9223372036854775807", "253402300800000", "-1",
        ])
    func unregisterTimestampOutOfRange(milliseconds: String) async throws {
        let answer = try await Self.exchange().respond(
            method: "DELETE", uri: "/devices/\(Self.token)?timestamp_ms=\(milliseconds)")
        #expect(answer.status == 400)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("admin-timestamp"))
    }

    @Test("a device's unregistered_at_ms outside 1970...9999 does not decode (config files)")
    func unregisteredAtOutOfRange() async throws {
        let json = #"{"token":"\#(Self.token)","environment":"sandbox","unregistered_at_ms":9223372036854775807}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(MockDeviceRegistration.self, from: Data(json.utf8))
        }
        let ok = #"{"token":"\#(Self.token)","environment":"sandbox","unregistered_at_ms":253402300799999}"#
        let device = try JSONDecoder().decode(MockDeviceRegistration.self, from: Data(ok.utf8))
        #expect(try String(decoding: JSONEncoder().encode(device), as: UTF8.self).contains("253402300799999"))
    }
}
