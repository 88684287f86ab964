import Foundation
import KKPushActivityAttributes
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `payload activity-attributes` (the description from the app's Swift source), `payload lint --activity-attributes`
/// and `send --activity-attributes` (pre-flight): a Live Activity payload that would not decode on the device is
/// named, field by field, before it is sent.
@Suite("Live Activities checked against the app's ActivityAttributes (the command line)", .serialized)
struct ActivityAttributesCLITests {
    static let source = """
        import ActivityKit
        struct MatchAttributes: ActivityAttributes {
            public struct ContentState: Codable, Hashable {
                var home: Int
                var away: Int
                var kickoff: Date
                var note: String?
            }
            var team: String
        }
        """

    static func write(_ text: String, _ name: String, in dir: URL) throws -> String {
        let url = dir.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test("the description from Swift source; lint warns per field (exit 1 with --strict), passes a good payload")
    func describeAndLint() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
        defer { try? FileManager.default.removeItem(at: dir) }
        let swift = try Self.write(Self.source, "MatchAttributes.swift", in: dir)
        let described = dir.appendingPathComponent("match.json").path
        let made = try await CLI.run(["payload", "activity-attributes", swift, "--out", described])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(
            made.stdout.contains("MatchAttributes: 1 attribute field(s), 4 content-state field(s)"), "\(made.stdout)")
        let printed = try await CLI.run(["payload", "activity-attributes", swift])
        #expect(printed.stdout == (try String(contentsOfFile: described, encoding: .utf8)))
        let object = try printed.json()
        #expect(object["date_decoding"] as? String == "deferredToDate", "\(printed.stdout)")
        #expect(object["name"] as? String == "MatchAttributes")

        let good = try Self.write(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":1,"away":0,"kickoff":785000000}}}"#,
            "good.json", in: dir)
        let ok = try await CLI.run(["payload", "lint", good, "--activity-attributes", described, "--strict"])
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")

        let bad = try Self.write(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":"1","kickoff":"2026-05-01T14:30:00Z"}}}"#,
            "bad.json", in: dir)
        let warned = try await CLI.run(["payload", "lint", bad, "--activity-attributes", described, "--json"])
        #expect(warned.status == 0, "APNs accepts it: \(warned.stdout)")
        let problems = try #require(try warned.json()["problems"] as? [[String: Any]])
        let decode = problems.filter { $0["code"] as? String == "live-activity-would-not-decode" }
        let messages = decode.compactMap { $0["message"] as? String }
        #expect(messages.count == 3, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("aps.content-state.home is string") })
        #expect(messages.contains { $0.hasPrefix("aps.content-state.away is missing") })
        #expect(
            messages.contains {
                $0.hasPrefix("aps.content-state.kickoff is the ISO 8601 date \"2026-05-01T14:30:00Z\"")
            })
        let strict = try await CLI.run(["payload", "lint", bad, "--activity-attributes", described, "--strict"])
        #expect(strict.status == 1)
        #expect(strict.stdout.contains("would not decode"), "\(strict.stdout)")

        // A description that is not one, Swift it cannot read: exit 2, naming what is wrong.
        let broken = try Self.write(
            #"{"name":"X","content_state":[{"name":"a","type":"Long"}]}"#, "broken.json", in: dir)
        let refused = try await CLI.run(["payload", "lint", good, "--activity-attributes", broken])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("content_state[0].type"), "\(refused.stderr)")
        let other = try Self.write("struct A: ActivityAttributes { var x: Elsewhere }", "Other.swift", in: dir)
        let unread = try await CLI.run(["payload", "activity-attributes", other])
        #expect(unread.status == 2)
        #expect(
            unread.stderr.contains(
                "'\(other)' cannot be read as an ActivityAttributes type: line 1: A.x has the type Elsewhere"),
            "\(unread.stderr)")
    }

    @Test(
        "several files read together (an extension's CodingKeys, a type of another file); a Unix time in a Date fails lint --strict, named"
    )
    func severalFilesAndUnixTime() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
        defer { try? FileManager.default.removeItem(at: dir) }
        let attributes = try Self.write(
            """
            import ActivityKit
            struct DienstAttributes: ActivityKit.ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var open: Int
                    var startsAt: Date
                    var shift: Shift
                    var elapsed: TimeInterval
                }
                var club: String
            }
            """, "DienstAttributes.swift", in: dir)
        let keys = try Self.write(
            """
            extension DienstAttributes.ContentState {
                enum CodingKeys: String, CodingKey { case open = "open_slots", startsAt = "starts_at", shift, elapsed }
            }
            """, "DienstAttributes+Keys.swift", in: dir)
        let shift = try Self.write(
            "enum Shift: String, Codable, Hashable { case morning = \"ochtend\", evening = \"avond\" }", "Shift.swift",
            in: dir)
        let described = dir.appendingPathComponent("dienst.json").path
        // One file alone: the type of the other file is refused, naming the file, line and field.
        let alone = try await CLI.run(["payload", "activity-attributes", attributes])
        #expect(alone.status == 2)
        #expect(
            alone.stderr.contains(
                "'\(attributes)' cannot be read as an ActivityAttributes type: line 6: DienstAttributes.ContentState.shift has the type Shift"
            ), "\(alone.stderr)")
        let made = try await CLI.run(["payload", "activity-attributes", attributes, keys, shift, "--out", described])
        #expect(made.status == 0, "\(made.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: described)))
        let fields = try #require((object as? [String: Any])?["content_state"] as? [[String: Any]])
        #expect(fields.compactMap { $0["name"] as? String } == ["open_slots", "starts_at", "shift", "elapsed"])

        let good = try Self.write(
            #"{"aps":{"timestamp":1777640400,"event":"update","content-state":{"open_slots":2,"starts_at":799333200,"shift":"avond","elapsed":0}}}"#,
            "good.json", in: dir)
        let ok = try await CLI.run(["payload", "lint", good, "--activity-attributes", described, "--strict"])
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        let unix = try Self.write(
            #"{"aps":{"timestamp":1777640400,"event":"update","content-state":{"open_slots":2,"starts_at":1777640400,"shift":"avond","elapsed":0}}}"#,
            "unix.json", in: dir)
        let warned = try await CLI.run(["payload", "lint", unix, "--activity-attributes", described, "--strict"])
        #expect(warned.status == 1, "\(warned.stdout) \(warned.stderr)")
        #expect(warned.stdout.contains("live-activity-date-misread"), "\(warned.stdout)")
        #expect(warned.stdout.contains("a Unix time in seconds"), "\(warned.stdout)")
        #expect(warned.stdout.contains("799333200"), "\(warned.stdout)")
        // --out naming any of the files read is refused.
        let clobber = try await CLI.run(["payload", "activity-attributes", attributes, keys, "--out", keys])
        #expect(clobber.status == 64, "\(clobber.stderr)")
    }

    @Test(
        "The Swift file given as --activity-attributes: the fix names a .json file, and following it leaves the Swift file whole; --out never replaces its own input (64)"
    )
    func outNeverReplacesTheSource() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
        defer { try? FileManager.default.removeItem(at: dir) }
        let swift = try Self.write(Self.source, "MatchAttributes.swift", in: dir)
        let json = dir.appendingPathComponent("MatchAttributes.json").path
        let update = try Self.write(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":1,"away":0,"kickoff":785000000}}}"#,
            "update.json", in: dir)
        func unchanged() throws -> Bool { try String(contentsOfFile: swift, encoding: .utf8) == Self.source }

        // payload lint, send and mock serve read the description through one place: each names the .json file.
        let lint = try await CLI.run(["payload", "lint", update, "--activity-attributes", swift])
        let send = try await CLI.run([
            "send", "--token", String(repeating: "ab", count: 32), "--topic",
            "nl.kantinekoning.app.push-type.liveactivity",
            "--push-type", "liveactivity", "--payload", update, "--activity-attributes", swift, "--url",
            "https://127.0.0.1:9", "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        let mock = try await CLI.run([
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--no-admin", "--activity-attributes",
            swift,
        ])
        for r in [lint, send, mock] {
            #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("is Swift source"), "\(r.stderr)")
            #expect(r.stderr.contains("--out \(json)"), "\(r.stderr)")
            #expect(!r.stderr.contains("--out \(swift)"), "\(r.stderr)")
        }
        // Following the fix: the description is written beside the source, which stays as it was.
        let followed = try await CLI.run(["payload", "activity-attributes", swift, "--out", json])
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(try unchanged())
        let linted = try await CLI.run(["payload", "lint", update, "--activity-attributes", json, "--strict"])
        #expect(linted.status == 0, "\(linted.stdout) \(linted.stderr)")

        // --out naming the Swift file itself, by its path or through a link: refused as a usage error, naming both,
        // and nothing written.
        let link = dir.appendingPathComponent("Link.swift").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: swift)
        for out in [swift, link] {
            let refused = try await CLI.run(["payload", "activity-attributes", swift, "--out", out])
            #expect(refused.status == 64, "\(out): \(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("--out \(out) is the Swift source \(swift)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--out \(json)"), "\(refused.stderr)")
            #expect(try unchanged(), "\(out): the Swift source was replaced")
        }

        // Swift the reader cannot use names the file, not a placeholder.
        let other = try Self.write("struct Plain { var x: Int }", "Plain.swift", in: dir)
        let unread = try await CLI.run(["payload", "activity-attributes", other])
        #expect(unread.status == 2)
        #expect(unread.stderr.contains("The Swift source '\(other)' cannot be read"), "\(unread.stderr)")
        #expect(!unread.stderr.contains("(FILE)") && !unread.stderr.contains("(activityAttributesSource)"))
    }

    @Test("send --activity-attributes: pre-flight refuses what would not decode (nothing sent); --no-preflight sends")
    func sendPreflight() async throws {
        var configuration = MockServerConfiguration.forTests()
        configuration.activityAttributes = try ActivityAttributesSource.describe(
            Self.source, sourceName: "MatchAttributes.swift")
        try await withMockServer(configuration: configuration) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
            defer { try? FileManager.default.removeItem(at: dir) }
            let swift = try Self.write(Self.source, "MatchAttributes.swift", in: dir)
            let described = dir.appendingPathComponent("match.json").path
            #expect(try await CLI.run(["payload", "activity-attributes", swift, "--out", described]).status == 0)
            let topic = "nl.kantinekoning.app"
            let device = server.mintDevice(environment: .sandbox, topic: topic + ".push-type.liveactivity")
            let bad = try Self.write(
                #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":1,"away":0,"kickoff":"today"}}}"#,
                "bad.json", in: dir)
            let base = [
                "send", "--token", device.token, "--topic", topic + ".push-type.liveactivity", "--push-type",
                "liveactivity", "--payload", bad, "--activity-attributes", described, "--url",
                server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key",
                CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id", "KKTEST0001",
                "--team-id", "KKTEAM0001",
            ]
            let refused = try await CLI.run(base)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("aps.content-state.kickoff is string"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--no-preflight"), "\(refused.stderr)")
            #expect(server.deliveries(token: device.token).isEmpty)
            let sent = try await CLI.run(base + ["--no-preflight"])
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(sent.stderr.contains("live-activity-would-not-decode"), "\(sent.stderr)")
            // The mock, given the same description, logs why the device would not decode it.
            let delivered = server.deliveries(token: device.token)
            #expect(delivered.count == 1)
            let warnings = delivered.first?.warnings ?? []
            #expect(warnings.count == 1 && warnings[0].hasPrefix("aps.content-state.kickoff is string"), "\(warnings)")
        }
    }

    @Test("send --activity-attributes: a Unix time in a Date field is refused as a misread date, not as undecodable")
    func sendPreflightMisreadDate() async throws {
        try await withMockServer { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
            defer { try? FileManager.default.removeItem(at: dir) }
            let swift = try Self.write(Self.source, "MatchAttributes.swift", in: dir)
            let described = dir.appendingPathComponent("match.json").path
            #expect(try await CLI.run(["payload", "activity-attributes", swift, "--out", described]).status == 0)
            let topic = "nl.kantinekoning.app"
            let device = server.mintDevice(environment: .sandbox, topic: topic + ".push-type.liveactivity")
            // 1777645800 is 2026-05-01 14:30 UTC as a Unix time: JSONDecoder reads it as seconds since 2001.
            let misread = try Self.write(
                #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":1,"away":0,"kickoff":1777645800}}}"#,
                "misread.json", in: dir)
            let refused = try await CLI.run([
                "send", "--token", device.token, "--topic", topic + ".push-type.liveactivity", "--push-type",
                "liveactivity", "--payload", misread, "--activity-attributes", described, "--url",
                server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key",
                CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id", "KKTEST0001",
                "--team-id", "KKTEAM0001", "--json",
            ])
            #expect(refused.status == 1)
            let error =
                try #require(
                    try JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])["error"]
                as? [String: Any]
            #expect(error?["code"] as? String == "live-activity-date-misread", "\(refused.stdout)")
            #expect((error?["message"] as? String)?.contains("a Unix time in seconds") == true, "\(refused.stdout)")
            #expect(server.deliveries(token: device.token).isEmpty)
        }
    }

    @Test("diagnose --activity-attributes: the field that would not decode is a finding, for start and update")
    func diagnoseNamesTheField() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-attributes")
        defer { try? FileManager.default.removeItem(at: dir) }
        let swift = try Self.write(Self.source, "MatchAttributes.swift", in: dir)
        let described = dir.appendingPathComponent("match.json").path
        let made = try await CLI.run(["payload", "activity-attributes", swift, "--out", described])
        #expect(made.status == 0, "\(made.stderr)")
        let topic = "nl.kantinekoning.app.push-type.liveactivity"
        func codesAndMessages(_ payload: String) async throws -> [(String, String)] {
            let path = try Self.write(payload, "payload-\(UUID().uuidString).json", in: dir)
            let r = try await CLI.run([
                "diagnose", "--topic", topic, "--push-type", "liveactivity", "--priority", "10", "--payload", path,
                "--activity-attributes", described, "--json",
            ])
            let findings = try #require(try r.json()["findings"] as? [[String: Any]], "\(r.stdout) \(r.stderr)")
            return findings.compactMap { f in
                guard let code = f["code"] as? String, let message = f["message"] as? String else { return nil }
                return (code, message)
            }
        }
        let start = try await codesAndMessages(
            #"{"aps":{"timestamp":1700000000,"event":"start","attributes-type":"GameAttributes","attributes":{"team":7},"content-state":{"home":1,"away":0,"kickoff":785000000},"alert":{"title":"Aftrap","body":"De wedstrijd begint"}}}"#
        )
        let startDecode = start.filter { $0.0 == "live-activity-would-not-decode" }.map(\.1)
        #expect(
            startDecode.contains { $0.contains("aps.attributes-type") && $0.contains("MatchAttributes") }, "\(start)")
        #expect(startDecode.contains { $0.contains("aps.attributes.team") }, "\(start)")
        #expect(startDecode.allSatisfy { $0.hasPrefix("Would not decode on the device") })

        let update = try await codesAndMessages(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":1,"away":0,"kickoff":"2026-05-01T14:30:00Z"}}}"#
        )
        let updateDecode = update.filter { $0.0 == "live-activity-would-not-decode" }.map(\.1)
        #expect(updateDecode.count == 1 && updateDecode[0].contains("aps.content-state.kickoff"), "\(update)")

        // A payload that decodes: no such finding.
        let good = try await codesAndMessages(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":2,"away":1,"kickoff":785000000}}}"#
        )
        #expect(!good.contains { $0.0 == "live-activity-would-not-decode" }, "\(good)")
    }
}
