import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

@testable import KKPushMock

/// GOAWAY against Go's own HTTP/2 transport (golang.org/x/net/http2, which sideshow/apns2 and gorush send with), not a
/// client written for the test: Tests/GoH2Client/main.go, built by the test with the system's Go and Debian's x/net
/// (`.ci/setup --tests` installs both). A thousand 4 KB pushes, a hundred in flight on one connection, and a GOAWAY
/// after 500 streams: many streams up to the last-stream-id are still incomplete then, their bodies held back by
/// flow control. Each push must get exactly one answer (or be refused unprocessed and sent again on a new
/// connection), and the mock must deliver each exactly once.
@Suite("GOAWAY with Go's x/net/http2 client")
struct MockGoClientGoAwayTests {
    /// What the Go client printed for one push.
    struct Push: Decodable {
        var apns_id: String
        var status: Int
        var attempts: Int
        var refusals: [String]?
        var lost_error: String?
    }

    /// What the Go client printed for the run.
    struct Report: Decodable {
        var pushes: [Push]
        var answered: Int
        var ok: Int
        var lost: Int
        var refused: Int
        var dials: Int
        var elapsed_ms: Int
    }

    /// Builds the Go client into `directory` (offline: GOPATH mode against the system's x/net).
    static func buildClient(in directory: String) async throws -> String {
        let go = "/usr/bin/go"
        guard FileManager.default.isExecutableFile(atPath: go) else {
            throw TestFailure("no Go toolchain at \(go): run .ci/setup --tests (golang-go, golang-golang-x-net-dev)")
        }
        let output = directory + "/goh2client"
        var environment = ProcessInfo.processInfo.environment
        environment["GO111MODULE"] = "off"
        environment["GOPATH"] = "/usr/share/gocode"
        environment["GOCACHE"] = directory + "/go-cache"
        environment["GOFLAGS"] = ""
        environment["HOME"] = directory
        let built = try await runProcess(
            URL(fileURLWithPath: go), ["build", "-o", output, Repository.file("Tests/GoH2Client/main.go").path],
            environment: environment, timeout: 300)
        guard built.status == 0, !built.timedOut else {
            throw TestFailure(
                "go build failed (\(built.status)\(built.timedOut ? ", timed out" : "")): "
                    + String(decoding: built.stderr, as: UTF8.self))
        }
        return output
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test(
        "1,000 pushes of 4 KB, 100 in flight, GOAWAY after 500: every push answered once, delivered once",
        .timeSensitive)
    func goAwayMidBatch() async throws {
        try await withTemporaryDirectory(prefix: "kkpush-goclient") { directory in
            let client = try await Self.buildClient(in: directory)
            let clock = ManualWallClock(Date())
            try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
                try server.addFault(MockFault(kind: .goAway(afterStreams: 500, reason: .shutdown), remaining: 1))
                let endpoint = server.sandboxEndpoint
                var environment = ProcessInfo.processInfo.environment
                environment["KKPUSH_GO_CLIENT_AUTHORIZATION"] = try Fixtures.token(issuedAt: clock.now())
                let run = try await runProcess(
                    URL(fileURLWithPath: client),
                    [
                        "-addr", "127.0.0.1:\(endpoint.port)", "-server-name", endpoint.host, "-ca",
                        Fixtures.path("ca.crt"), "-topic", Fixtures.topic, "-n", "1000", "-concurrency", "100",
                        "-size", "4000", "-timeout", "150s",
                    ],
                    environment: environment, timeout: 180)
                let stderr = String(decoding: run.stderr, as: UTF8.self)
                try #require(run.status == 0 && !run.timedOut, "Go client: exit \(run.status): \(stderr)")
                let report = try JSONDecoder().decode(Report.self, from: run.stdout)

                let lost = report.pushes.filter { $0.status == 0 }
                #expect(report.pushes.count == 1000)
                #expect(lost.isEmpty, "\(lost.count) pushes lost: \(lost.prefix(5).map { $0.lost_error ?? "" })")
                #expect(report.ok == 1000, "answers: \(report.answered), 200s: \(report.ok)")
                // The GOAWAY came, and the client went on on a second connection.
                #expect(report.dials >= 2, "dials: \(report.dials)")

                // Delivered at most once (exactly once, as each push got its 200).
                var delivered: [String: Int] = [:]
                for d in server.deliveries(limit: 10_000) { delivered[d.apnsID.uppercased(), default: 0] += 1 }
                let twice = delivered.filter { $0.value > 1 }
                #expect(twice.isEmpty, "delivered more than once: \(twice.prefix(5))")
                let missing = report.pushes.filter { $0.status == 200 && delivered[$0.apns_id.uppercased()] != 1 }
                #expect(missing.isEmpty, "answered 200 but not delivered once: \(missing.prefix(5).map(\.apns_id))")
                #expect(delivered.count == 1000)
            }
        }
    }
}
