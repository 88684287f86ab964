import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `--credentials FILE`: `send-batch` with several apps, keys and teams against the mock, `send`'s scope pre-flight,
/// `jwt scope`, `diagnose`'s scope findings and `audit`'s count of enrollments no credential serves.
@Suite("kkpush --credentials: several teams and keys, scopes (the command line)", .serialized)
struct CredentialsCLITests {
    /// A credentials file over the repository's keys: `main` (KKTEST0001, production only, the app's topic) and
    /// `sandbox` (KKTEST0002, sandbox only, any topic), and another team's `other` (the fleet's key c1, any).
    static func repositoryCredentials(in dir: URL, otherTeamKey: TestCredentialFleet.Key? = nil) throws -> String {
        var entries: [[String: Any]] = [
            [
                "name": "main", "team_id": "KKTEAM0001", "key_id": "KKTEST0001",
                "key_file": Repository.certificate("AuthKey_KKTEST0001.p8"), "environments": ["production"],
                "topics": ["nl.kantinekoning.app"],
            ],
            [
                "name": "sandbox", "team_id": "KKTEAM0001", "key_id": "KKTEST0002",
                "key_file": Repository.certificate("AuthKey_KKTEST0002.p8"), "environments": ["sandbox"],
            ],
        ]
        if let other = otherTeamKey {
            entries.append(["name": "other", "team_id": other.teamID, "key_id": other.keyID, "key_file": other.path])
        }
        let path = dir.appendingPathComponent("credentials.json")
        try JSONSerialization.data(withJSONObject: ["credentials": entries]).write(to: path)
        return path.path
    }

    static func line(_ token: String, topic: String? = nil, credential: String? = nil, environment: String? = nil)
        throws -> String
    {
        var object: [String: Any] = ["token": token]
        object["topic"] = topic
        object["credential"] = credential
        object["environment"] = environment
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: .sortedKeys), as: UTF8.self)
    }

    @Test("send-batch: 3 teams, 5 keys, 4 topics; out-of-scope lines refused before sending with the reason")
    func batchAcrossTeams() async throws {
        let fleet = try await TestCredentialFleet.make()
        defer { fleet.remove() }
        try await withMockServer(configuration: .forTests()) { server in
            for key in try MockKey.loadRegistry(at: fleet.registryPath) { try server.registerKey(key) }
            var lines: [String] = []
            var expectedTopic: [String: String] = [:]
            for topic in TestCredentialFleet.topics {
                for token in TestTokens.random(6) {
                    lines.append(try Self.line(token, topic: topic))
                    expectedTopic[token] = topic
                }
            }
            for token in TestTokens.random(6) {
                lines.append(try Self.line(token, topic: "nl.voetbal.app", credential: "b2"))
                expectedTopic[token] = "nl.voetbal.app"
            }
            // Plain token lines go to --topic (nl.kantinekoning.app: a1).
            for token in TestTokens.random(4) {
                lines.append(token)
                expectedTopic[token] = "nl.kantinekoning.app"
            }
            let tokensPath = fleet.directory.appendingPathComponent("tokens.jsonl").path
            let arguments = [
                "send-batch", "--tokens", tokensPath, "--topic", "nl.kantinekoning.app", "--credentials",
                fleet.credentialsPath, "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                server.productionEndpoint.baseURL, "--ca-file", try #require(server.caFile),
                "--env", "sandbox", "--title", "Dienst", "--max-connections", "2",
            ]
            try (lines.joined(separator: "\n") + "\n").write(toFile: tokensPath, atomically: true, encoding: .utf8)
            let clean = try await CLI.run(arguments)
            #expect(clean.status == 0, "stderr: \(clean.stderr)")
            let results = try SendBatchCLITests.results(clean.stdout)
            #expect(results.count == lines.count)
            #expect(results.allSatisfy { $0["status"] as? String == "accepted" }, "\(clean.stdout)")
            #expect(!clean.stderr.contains("InvalidProviderToken") && !clean.stderr.contains("UnrelatedKeyIdInToken"))
            let deliveries = server.deliveries(limit: 1000)
            #expect(deliveries.count == lines.count)
            for d in deliveries {
                #expect(expectedTopic[d.token] == d.topic, "\(d.token.prefix(8))… went to \(d.topic)")
            }

            // Lines no credential may serve: refused before sending, named, counted.
            let refused = [
                try Self.line(TestTokens.random(), topic: "nl.kantinekoning.kassa", credential: "a1"),
                try Self.line(
                    TestTokens.random(), topic: "nl.kantinekoning.kassa", credential: "a2", environment: "production"),
                try Self.line(TestTokens.random(), topic: "nl.voetbal.app", credential: "nope"),
                #"{"channel": "dGVzdA=="}"#,
            ]
            try ((lines + refused).joined(separator: "\n") + "\n").write(
                toFile: tokensPath, atomically: true, encoding: .utf8)
            let scoped = try await CLI.run(arguments)
            #expect(scoped.status == 1, "stderr: \(scoped.stderr)")
            let second = try SendBatchCLITests.results(scoped.stdout)
            let failed = second.filter { $0["status"] as? String != "accepted" }
            #expect(second.count == lines.count + 4 && failed.count == 4, "\(scoped.stdout)")
            let errors = failed.compactMap { $0["error"] as? String }.joined(separator: "\n")
            #expect(errors.contains("credential-topic") && errors.contains("credential-environment"), "\(errors)")
            #expect(errors.contains("unknown-credential") && errors.contains("broadcasts are not routed"), "\(errors)")
            #expect(scoped.stderr.contains("of which 3 refused for credential scope"), "\(scoped.stderr)")
            #expect(server.deliveries(limit: 1000).count == 2 * lines.count)
        }
    }

    @Test("send --credentials: the scope problem named before sending (nothing reaches the host)")
    func sendPreflight() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-credentials")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.repositoryCredentials(in: dir)
        let port = try freeLoopbackPort()
        let base = [
            "send", "--credentials", file, "--token", TestTokens.random(), "--title", "x", "--url",
            "https://127.0.0.1:\(port)", "--ca-file", Repository.certificate("ca.crt"), "--json",
        ]
        let environment = try await CLI.run(
            base + ["--credential", "main", "--env", "sandbox", "--topic", "nl.kantinekoning.app"])
        #expect(environment.status == 1, "\(environment.stdout) \(environment.stderr)")
        #expect(environment.stdout.contains("credential-environment"), "\(environment.stdout)")
        #expect(environment.stdout.contains("BadEnvironmentKeyIdInToken"))
        let topic = try await CLI.run(
            base + ["--credential", "main", "--env", "production", "--topic", "nl.other.app"])
        #expect(topic.status == 1 && topic.stdout.contains("credential-topic"), "\(topic.stdout) \(topic.stderr)")
        let none = try await CLI.run(base + ["--env", "production", "--topic", "nl.other.app"])
        #expect(none.stdout.contains("no-credential-serves"), "\(none.stdout) \(none.stderr)")
        let flag = try await CLI.run(
            base + ["--credential", "main", "--key", Repository.certificate("AuthKey_KKTEST0001.p8")])
        #expect(flag.status == 64, "\(flag.stderr)")
        for r in [environment, topic, none] {
            #expect(!r.stdout.contains("PRIVATE KEY") && !r.stderr.contains("PRIVATE KEY"))
        }
    }

    @Test("jwt scope: may the key serve the topic in the environment, and if not, why")
    func jwtScope() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-credentials")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.repositoryCredentials(in: dir)
        let yes = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--key-id", "KKTEST0001", "--topic", "nl.kantinekoning.app.voip",
            "--env", "production",
        ])
        #expect(yes.status == 0 && yes.stdout.contains("credential \"main\""), "\(yes.stdout) \(yes.stderr)")
        let env = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--credential", "main", "--topic", "nl.kantinekoning.app", "--env",
            "sandbox", "--json",
        ])
        #expect(env.status == 1, "\(env.stdout) \(env.stderr)")
        let j = try env.json()
        #expect(j["serves"] as? Bool == false && j["servers"] as? [String] == ["sandbox"])
        let problem = try #require(j["problem"] as? [String: Any])
        #expect(problem["code"] as? String == "credential-environment")
        #expect(problem["apns_reason"] as? String == "BadEnvironmentKeyIdInToken")
        let topic = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--credential", "main", "--topic", "nl.voetbal.app", "--env",
            "production",
        ])
        #expect(topic.status == 1 && topic.stdout.contains("error credential-topic"), "\(topic.stdout)")
        #expect(topic.stdout.contains("TopicDisallowed"))
        let chosen = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--topic", "nl.voetbal.app", "--env", "sandbox", "--json",
        ])
        #expect(try chosen.json()["credential"] as? String == "sandbox", "\(chosen.stdout)")
    }

    @Test("jwt scope: an extension's bundle id is not covered by its app's scope; an empty --topic is a usage error")
    func jwtScopeExtensionAndEmptyTopic() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-credentials")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.repositoryCredentials(in: dir)
        let named = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--credential", "main", "--topic", "nl.kantinekoning.app.widget",
            "--env", "production", "--json",
        ])
        #expect(named.status == 1, "\(named.stdout) \(named.stderr)")
        let j = try named.json()
        #expect(j["serves"] as? Bool == false && (j["servers"] as? [String])?.isEmpty == true, "\(named.stdout)")
        #expect((j["problem"] as? [String: Any])?["code"] as? String == "credential-topic")
        // Not named: no entry of the file serves the extension in production.
        let chosen = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--topic", "nl.kantinekoning.app.widget", "--env", "production",
        ])
        #expect(chosen.status == 1 && chosen.stdout.contains("no-credential-serves"), "\(chosen.stdout)")
        // The app's own suffixed topics stay covered.
        let liveActivity = try await CLI.run([
            "jwt", "scope", "--credentials", file, "--credential", "main", "--topic",
            "nl.kantinekoning.app.push-type.liveactivity", "--env", "production",
        ])
        #expect(liveActivity.status == 0, "\(liveActivity.stdout) \(liveActivity.stderr)")
        for topic in ["", " "] {
            let empty = try await CLI.run([
                "jwt", "scope", "--credentials", file, "--credential", "main", "--topic", topic, "--env", "production",
            ])
            #expect(empty.status == 64, "'\(topic)': \(empty.stdout) \(empty.stderr)")
            #expect(empty.stderr.contains("--topic is empty") && !empty.stdout.contains("may serve"), "\(empty.stderr)")
        }
    }

    @Test("A credentials file giving one Key ID two different keys is refused, naming both entries (exit 2)")
    func oneKeyIDTwoKeys() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-credentials")
        defer { try? FileManager.default.removeItem(at: dir) }
        let entries: [[String: Any]] = [
            [
                "name": "prod", "team_id": "KKTEAM0001", "key_id": "KKTEST0001",
                "key_file": Repository.certificate("AuthKey_KKTEST0001.p8"), "environments": ["production"],
            ],
            [
                "name": "dev", "team_id": "KKTEAM0001", "key_id": "KKTEST0001",
                "key_file": Repository.certificate("AuthKey_KKTEST0002.p8"), "environments": ["sandbox"],
            ],
        ]
        let file = dir.appendingPathComponent("credentials.json")
        try JSONSerialization.data(withJSONObject: ["credentials": entries]).write(to: file)
        for env in ["sandbox", "production"] {
            let r = try await CLI.run([
                "jwt", "scope", "--credentials", file.path, "--key-id", "KKTEST0001", "--topic",
                "nl.kantinekoning.app", "--env", env,
            ])
            #expect(r.status == 2, "\(env): \(r.stdout) \(r.stderr)")
            #expect(
                r.stderr.contains("entries 1 (\"prod\") and 2 (\"dev\") both have `key_id` KKTEST0001"),
                "\(r.stderr)")
            #expect(r.stderr.contains("AuthKey_KKTEST0002.p8") && !r.stdout.contains("may serve"), "\(r.stderr)")
            #expect(!r.stderr.contains("PRIVATE KEY"))
        }
    }

    @Test("diagnose --credentials: key not scoped for the environment or the topic; two teams on one connection")
    func diagnoseScope() async throws {
        let fleet = try await TestCredentialFleet.make()
        defer { fleet.remove() }
        let file = try Self.repositoryCredentials(in: fleet.directory, otherTeamKey: fleet.key("c1"))
        func codes(_ args: [String]) async throws -> (verdict: String?, codes: [String], result: CLIResult) {
            let r = try await CLI.run(["diagnose", "--json", "--ignore-process-env", "--credentials", file] + args)
            let j = try r.json()
            let verdict = (j["verdict"] as? [String: Any])?["code"] as? String
            let codes = try #require(j["findings"] as? [[String: Any]]).compactMap { $0["code"] as? String }
            return (verdict, codes, r)
        }
        let env = try await codes(["--credential", "main", "--env", "sandbox", "--topic", "nl.kantinekoning.app"])
        #expect(env.codes.contains("key-environment"), "\(env.result.stdout)")
        let topic = try await codes(["--credential", "main", "--env", "production", "--topic", "nl.voetbal.app"])
        #expect(topic.verdict == "key-topic", "\(topic.result.stdout)")
        #expect(topic.result.stdout.contains("TopicDisallowed"))
        // An extension's own bundle id is another app's topic: the key scoped to the app does not serve it.
        let widget = try await codes([
            "--credential", "main", "--env", "production", "--topic", "nl.kantinekoning.app.widget",
        ])
        #expect(widget.codes.contains("key-topic"), "\(widget.result.stdout)")
        let voip = try await codes([
            "--credential", "main", "--env", "production", "--topic", "nl.kantinekoning.app.voip", "--push-type",
            "voip",
        ])
        #expect(!voip.codes.contains("key-topic"), "\(voip.result.stdout)")
        let teams = try await codes([
            "--credential", "sandbox", "--env", "sandbox", "--topic", "nl.kantinekoning.app", "--send-answer",
            "InvalidProviderToken",
        ])
        #expect(teams.verdict == "teams-on-one-connection", "\(teams.result.stdout)")
        #expect(teams.result.stdout.contains("KKFLEETC01") && teams.result.stdout.contains("KKTEAM0001"))
        #expect(teams.result.stdout.contains("(kkpush send-batch) with (--credentials)"), "the fix names the command")
        let healthy = try await codes([
            "--credential", "sandbox", "--env", "sandbox", "--topic", "nl.kantinekoning.app",
        ])
        #expect(!healthy.codes.contains("key-topic") && !healthy.codes.contains("key-environment"))
        #expect(!healthy.codes.contains("teams-on-one-connection"), "\(healthy.result.stdout)")
    }

    @Test("audit --credentials: enrollments no credential may serve are counted, in text and --json")
    func auditCoverage() async throws {
        let rows = [
            AuditCLITests.Row(
                tenant: "vvwilhelmus", device: "d1", teams: ["jo11"], hardware: "h1", token: AuditCLITests.token(1),
                build: "development"),
            AuditCLITests.Row(
                tenant: "vvwilhelmus", device: "d2", teams: ["jo11"], hardware: "h2", token: AuditCLITests.token(2),
                build: "production"),
            AuditCLITests.Row(
                tenant: "vvwilhelmus", device: "d3", teams: ["jo11"], hardware: "h3", token: AuditCLITests.token(3),
                build: "production"),
            AuditCLITests.Row(tenant: "vvwilhelmus", device: "d4", teams: ["jo11"], hardware: "h4", token: nil),
        ]
        let (db, dir) = try await AuditCLITests.makeSQLite(rows)
        defer { try? FileManager.default.removeItem(at: dir) }
        // Only a sandbox key: the two production enrollments cannot be served.
        let entries: [[String: Any]] = [
            [
                "name": "sandbox", "team_id": "KKTEAM0001", "key_id": "KKTEST0002",
                "key_file": Repository.certificate("AuthKey_KKTEST0002.p8"), "environments": ["sandbox"],
            ]
        ]
        let file = dir.appendingPathComponent("credentials.json")
        try JSONSerialization.data(withJSONObject: ["credentials": entries]).write(to: file)
        let json = try await CLI.run([
            "audit", "--store", db, "--json", "--ignore-process-env", "--credentials", file.path,
        ])
        let last = try #require(json.stdout.split(separator: "\n").last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        let summary = try #require(object["summary"] as? [String: Any])
        let coverage = try #require(summary["credentials"] as? [String: Any], "\(summary)")
        #expect(coverage["unservable"] as? Int == 2 && coverage["unservable_production"] as? Int == 2, "\(coverage)")
        #expect(coverage["unservable_sandbox"] as? Int == 0)
        let text = try await CLI.run(["audit", "--store", db, "--ignore-process-env", "--credentials", file.path])
        #expect(
            text.stdout.contains("2 enrollments with a device token no credential of the file may serve"),
            "\(text.stdout)")
    }
}
