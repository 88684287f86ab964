import Foundation
import KKPushCore
import KKPushMock
import KKPushStore
import KKPushTestSupport
import Testing

/// `kkpush activity …` against the in-process mock over TLS, with an SQLite registry: one push per key, updates
/// refused before the update token and after the end, the start budget's deferral with its time, dry runs.
@Suite("kkpush activity")
struct ActivityCLITests {
    static let topic = "nl.kantinekoning.app"
    static let type = "DienstAttributes"

    /// The connection flags for `server`, with the repository's test key.
    static func connection(_ server: MockAPNsServer) throws -> [String] {
        [
            "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key",
            CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id", "KKTEST0001",
            "--team-id", "KKTEAM0001",
        ]
    }

    /// The sending commands reach a server: a process of their own, as `send` runs in the other tests.
    static func send(_ args: [String]) async throws -> CLIResult { try await CLI.spawn(args) }

    static func json(_ result: CLIResult) throws -> [String: Any] { try result.json() }

    static func error(_ result: CLIResult) throws -> [String: Any] {
        try #require(try result.json()["error"] as? [String: Any], "\(result.stdout) \(result.stderr)")
    }

    static func date(_ value: Any?) -> Date? {
        (value as? String).flatMap { ISO8601DateFormatter().date(from: $0) }
    }

    @Test("Start twice with one key sends one push; update before the token is refused; token, update, end, end again")
    func lifecycle() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-activity-cli")
            defer { try? FileManager.default.removeItem(at: dir) }
            let registry = ["--registry", dir.appendingPathComponent("registry.sqlite").path]
            let pushToStart = server.mintDevice(environment: .sandbox, topic: Self.topic + ".push-type.liveactivity")
            let update = server.mintDevice(environment: .sandbox, topic: Self.topic + ".push-type.liveactivity")
            let connection = try Self.connection(server)

            let reported = try await CLI.run(
                ["activity", "report", "--device", "phone-1", "--push-to-start", "\(Self.type)=\(pushToStart.token)"]
                    + registry)
            #expect(reported.status == 0, "\(reported.stderr)")
            #expect(reported.stdout.contains("push-to-start token accepted"))

            let start =
                [
                    "activity", "start", "--activity-key", "dienst-kk-7", "--device", "phone-1", "--topic", Self.topic,
                    "--attributes-type", Self.type, "--attributes", #"{"dienst":"Bar"}"#, "--content-state",
                    #"{"signedUp":1}"#, "--title", "Dienst", "--json",
                ] + registry + connection
            let first = try await Self.send(start)
            #expect(first.status == 0, "\(first.stdout) \(first.stderr)")
            let firstJSON = try Self.json(first)
            #expect(firstJSON["outcome"] as? String == "accepted")
            #expect(firstJSON["token"] as? String == pushToStart.token)
            let second = try await Self.send(start)
            #expect(second.status == 0, "\(second.stdout) \(second.stderr)")
            let secondJSON = try Self.json(second)
            #expect(secondJSON["outcome"] as? String == "existing")
            #expect(secondJSON["apns_id"] as? String == firstJSON["apns_id"] as? String)
            let starts = server.deliveries(token: pushToStart.token)
            #expect(starts.count == 1)
            let payload = try #require(starts.first?.payload)
            #expect(payload.contains(#""kk_activity_key":"dienst-kk-7""#), "\(payload)")
            #expect(payload.contains(#""input-push-token":1"#), "\(payload)")

            let updateArgs =
                [
                    "activity", "update", "--activity-key", "dienst-kk-7", "--content-state", #"{"signedUp":2}"#,
                    "--json",
                ]
                + registry + connection
            let early = try await Self.send(updateArgs)
            #expect(early.status == 1, "\(early.stdout) \(early.stderr)")
            let earlyError = try Self.error(early)
            #expect(earlyError["code"] as? String == "activity-no-update-token")
            #expect((earlyError["fix"] as? String)?.contains("activity_tokens") == true)
            #expect(server.deliveries(token: update.token).isEmpty)

            let tokenReport = try await CLI.run(
                ["activity", "report", "--device", "phone-1", "--activity-token", "dienst-kk-7=\(update.token)"]
                    + registry)
            #expect(tokenReport.status == 0, "\(tokenReport.stderr)")
            let updated = try await Self.send(updateArgs)
            #expect(updated.status == 0, "\(updated.stdout) \(updated.stderr)")
            #expect(try Self.json(updated)["token"] as? String == update.token)
            #expect(server.deliveries(token: update.token).count == 1)
            #expect(server.deliveries(token: update.token).first?.payload.contains(#""event":"update""#) == true)

            let endArgs = ["activity", "end", "--activity-key", "dienst-kk-7", "--json"] + registry + connection
            let ended = try await Self.send(endArgs)
            #expect(ended.status == 0, "\(ended.stdout) \(ended.stderr)")
            let endedActivity = try #require(try Self.json(ended)["activity"] as? [String: Any])
            #expect(endedActivity["state"] as? String == "ended")
            let again = try await Self.send(endArgs)
            #expect(again.status == 1, "\(again.stdout) \(again.stderr)")
            #expect(try Self.error(again)["code"] as? String == "activity-ended")
            #expect(server.deliveries(token: update.token).count == 2)

            let listed = try await CLI.run(["activity", "list", "--json"] + registry)
            let activities = try #require(try listed.json()["activities"] as? [[String: Any]])
            #expect(activities.count == 1)
            #expect(activities.first?["state"] as? String == "ended")
        }
    }

    @Test(
        "An activity the app started itself: recorded under --topic, its update goes to <bundle id>.push-type.liveactivity; without a topic it is not recorded; one stored without a topic is refused, nothing sent"
    )
    func appStartedActivity() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-activity-cli")
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("registry.sqlite").path
            let registry = ["--registry", path]
            let liveTopic = Self.topic + ".push-type.liveactivity"
            let own = server.mintDevice(environment: .sandbox, topic: liveTopic)
            let connection = try Self.connection(server)
            let report = [
                "activity", "report", "--device", "phone-3", "--activity-token", "app-own-1=\(own.token)",
                "--attributes-type", Self.type, "--json",
            ]
            let updateArgs =
                [
                    "activity", "update", "--activity-key", "app-own-1", "--content-state", #"{"signedUp":2}"#,
                    "--json",
                ] + registry + connection

            // No topic in the report: not recorded, and the reason names the flag that gives it.
            let bare = try await CLI.run(report + registry)
            #expect(bare.status == 0, "\(bare.stdout) \(bare.stderr)")
            let ignored = try #require(try bare.json()["ignored"] as? [String])
            #expect(ignored.count == 1, "\(ignored)")
            #expect(ignored.first?.contains("app-own-1") == true && ignored.first?.contains("(--topic)") == true)
            #expect(ignored.first?.contains("(topic)") == false, "\(ignored)")
            let unknown = try await Self.send(updateArgs)
            #expect(unknown.status != 0)
            #expect(try Self.error(unknown)["code"] as? String == "activity-unknown")

            // With the app's bundle id: recorded active, and its update goes to the Live Activity topic.
            let reported = try await CLI.run(report + ["--topic", Self.topic] + registry)
            #expect(reported.status == 0, "\(reported.stdout) \(reported.stderr)")
            let recorded = try #require(try reported.json()["activities"] as? [[String: Any]])
            #expect(recorded.first?["state"] as? String == "active" && recorded.first?["topic"] as? String == liveTopic)
            let updated = try await Self.send(updateArgs)
            #expect(updated.status == 0, "\(updated.stdout) \(updated.stderr)")
            var deliveries = server.deliveries(token: own.token)
            #expect(deliveries.map(\.topic) == [liveTopic])
            #expect(deliveries.first?.payload.contains(#""event":"update""#) == true)

            // A row an older kkpush stored without a topic: refused by name, never sent to ".push-type.liveactivity".
            let sqlite = try await SQLiteConnection.open(path: path)
            _ = try await sqlite.query("UPDATE kkpush_activities SET topic = '' WHERE key = 'app-own-1'")
            await sqlite.close()
            let refused = try await Self.send(updateArgs)
            #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
            let error = try Self.error(refused)
            #expect(error["code"] as? String == "activity-topic-missing")
            #expect((error["message"] as? String)?.contains("'app-own-1'") == true, "\(error)")
            #expect((error["fix"] as? String)?.contains("(--topic)") == true, "\(error)")
            let refusedEnd = try await Self.send(
                ["activity", "end", "--activity-key", "app-own-1", "--json"] + registry + connection)
            #expect(try Self.error(refusedEnd)["code"] as? String == "activity-topic-missing")
            #expect(server.deliveries(token: own.token).count == 1)
            #expect(server.deliveries(limit: 100).allSatisfy { $0.topic == liveTopic })

            // The app's next report with its bundle id gives the activity its topic: the update goes out again.
            let again = try await CLI.run(report + ["--topic", Self.topic] + registry)
            #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
            let resent = try await Self.send(updateArgs)
            #expect(resent.status == 0, "\(resent.stdout) \(resent.stderr)")
            deliveries = server.deliveries(token: own.token)
            #expect(deliveries.map(\.topic) == [liveTopic, liveTopic])
        }
    }

    @Test("Past the start budget a start is deferred with the time the budget frees; a dry run records nothing")
    func budgetAndDryRun() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-activity-cli")
            defer { try? FileManager.default.removeItem(at: dir) }
            let registry = [
                "--registry", dir.appendingPathComponent("registry.sqlite").path, "--budget-count", "1",
                "--budget-window", "600",
            ]
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic + ".push-type.liveactivity")
            let connection = try Self.connection(server)
            func start(_ key: String, _ extra: [String] = []) -> [String] {
                [
                    "activity", "start", "--activity-key", key, "--device", "phone-2", "--topic", Self.topic,
                    "--attributes-type", Self.type, "--content-state", "{}", "--body", "Dienst",
                    "--push-to-start-token", device.token, "--json",
                ] + registry + connection + extra
            }
            let dry = try await Self.send(start("dry-1", ["--dry-run"]))
            #expect(dry.status == 0, "\(dry.stdout) \(dry.stderr)")
            #expect(try Self.json(dry)["outcome"] as? String == "planned")
            let unknown = try await CLI.run(["activity", "inspect", "--activity-key", "dry-1", "--json"] + registry)
            #expect(unknown.status == 2)
            #expect(try Self.error(unknown)["code"] as? String == "activity-unknown")
            #expect(server.deliveries(token: device.token).isEmpty)

            let first = try await Self.send(start("budget-1"))
            #expect(first.status == 0, "\(first.stdout) \(first.stderr)")
            let deferred = try await Self.send(start("budget-2"))
            #expect(deferred.status == 1, "\(deferred.stdout) \(deferred.stderr)")
            let deferredJSON = try Self.json(deferred)
            #expect(deferredJSON["outcome"] as? String == "deferred")
            let inspected = try await CLI.run(
                ["activity", "inspect", "--activity-key", "budget-1", "--json"] + registry)
            let requestedAt = try #require(
                Self.date((try inspected.json()["activity"] as? [String: Any])?["requested_at"]))
            #expect(Self.date(deferredJSON["deferred_until"]) == requestedAt.addingTimeInterval(600))
            #expect((deferredJSON["why"] as? String)?.contains("the start budget is 1 per 600 s") == true)
            let refused = try await Self.send(start("budget-2", ["--over-budget", "refuse"]))
            #expect(refused.status == 1)
            #expect(try Self.error(refused)["code"] as? String == "activity-start-budget")
            #expect(server.deliveries(token: device.token).count == 1)
        }
    }

    @Test("--dry-run reads the key as a send does: a missing or malformed --key fails it with the real run's error")
    func dryRunReadsTheKey() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-activity-dry")
        defer { try? FileManager.default.removeItem(at: dir) }
        let registry = ["--registry", dir.appendingPathComponent("registry.sqlite").path]
        let garbage = dir.appendingPathComponent("AuthKey_GARBAGE.p8")
        try Data("not a key\n".utf8).write(to: garbage)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: garbage.path)
        let missing = dir.appendingPathComponent("AuthKey_MISSING.p8").path
        func start(_ key: String, keyFile: String, _ extra: [String] = []) -> [String] {
            [
                "activity", "start", "--activity-key", key, "--device", "phone-dry", "--topic", Self.topic,
                "--attributes-type", Self.type, "--content-state", "{}", "--title", "Dienst",
                "--push-to-start-token", String(repeating: "d4", count: 32), "--key", keyFile, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--json",
            ] + registry + extra
        }
        for (name, keyFile) in [("missing", missing), ("garbage", garbage.path)] {
            let dry = try await CLI.run(start("dry-\(name)", keyFile: keyFile, ["--dry-run"]))
            // The real run plans (and records) its start, then reads the key before anything is sent.
            let real = try await CLI.run(start("real-\(name)", keyFile: keyFile))
            #expect(dry.status == 2 && real.status == 2, "\(name): \(dry.stdout) \(real.stdout)")
            let dryError = try Self.error(dry)
            let realError = try Self.error(real)
            let code = try #require(realError["code"] as? String, "\(name): \(real.stdout)")
            #expect(dryError["code"] as? String == code, "\(name): \(dry.stdout)")
            #expect(dryError["message"] as? String == realError["message"] as? String, "\(name)")
            #expect((dryError["message"] as? String)?.contains(keyFile) == true, "\(name): \(dry.stdout)")
            // Nothing of the dry run reached the registry.
            let inspected = try await CLI.run(
                ["activity", "inspect", "--activity-key", "dry-\(name)", "--json"] + registry)
            #expect(try Self.error(inspected)["code"] as? String == "activity-unknown")
        }
        // With the repository's key the same dry run plans the start.
        let good = try await CLI.run(
            start(
                "dry-good", keyFile: CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
                ["--dry-run"]))
        #expect(good.status == 0, "\(good.stdout) \(good.stderr)")
        #expect(try Self.json(good)["outcome"] as? String == "planned")
    }

    @Test("--registry postgres://: kkpush's own tables, a report and a start's plan, a refused rotation kept")
    func postgresRegistry() async throws {
        let server = try await PostgresServer.sharedServer()
        let registry = ["--registry", server.url(try await server.newDatabase("activity_cli"))]
        let token = String(repeating: "e5", count: 32)
        let reported = try await CLI.run(
            ["activity", "report", "--device", "club/phone", "--push-to-start", "\(Self.type)=\(token)", "--json"]
                + registry)
        #expect(reported.status == 0, "\(reported.stdout) \(reported.stderr)")
        let wiped = try await CLI.run(
            ["activity", "report", "--device", "club/phone", "--push-to-start", "\(Self.type)=", "--json"] + registry)
        let rotations = try #require(try wiped.json()["rotations"] as? [[String: Any]])
        #expect(rotations.first?["outcome"] as? String == "refused")
        let inspected = try await CLI.run(["activity", "inspect", "--device", "club/phone", "--json"] + registry)
        let tokens = try #require(try inspected.json()["push_to_start_tokens"] as? [[String: Any]])
        #expect(tokens.first?["token"] as? String == token)
        #expect((tokens.first?["history"] as? [[String: Any]])?.count == 2)
        let planned = try await CLI.run(
            [
                "activity", "start", "--activity-key", "dienst-pg-1", "--device", "club/phone", "--topic", Self.topic,
                "--attributes-type", Self.type, "--content-state", "{}", "--title", "Dienst", "--dry-run", "--json",
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001",
            ] + registry)
        #expect(planned.status == 0, "\(planned.stdout) \(planned.stderr)")
        #expect(try planned.json()["token"] as? String == token)
        let listed = try await CLI.run(["activity", "list", "--json"] + registry)
        #expect((try listed.json()["activities"] as? [Any])?.isEmpty == true)
    }
}
