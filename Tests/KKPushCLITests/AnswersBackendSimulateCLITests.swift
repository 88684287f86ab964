import Foundation
import KKPushSimulator
import KKPushTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// "Every answer true" for `backend *`, `simulate` and `demo`: the command line, loopback and temporary
/// folders only.
@Suite("Answers: backend, simulate, demo")
struct AnswersBackendSimulateCLITests {
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let phone = "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"
    static let env = ["KKPUSH_BACKEND_SECRET": secret]

    /// Help text with its line breaks and indentation folded into single spaces.
    static func flat(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    static func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-answers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func enroll(_ db: String, _ extra: [String]) async throws -> CLIResult {
        try await CLI.run(
            [
                "backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
                "--hardware-identifier", phone,
            ] + extra, environment: env)
    }

    // MARK: 1. enroll over an existing device id

    @Test(
        "backend enroll --device-id of an existing enrollment is refused, naming what it holds; --replace says what it replaced"
    )
    func enrollExisting() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("e.sqlite").path
        // An enrollment that holds a token, build environment, app version and e-mail (an import).
        let row: [String: Any] = [
            "device_id": "dev-x", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "manager",
            "hardware_identifier": Self.phone, "apns_token": String(repeating: "ab", count: 32),
            "build_environment": "development", "app_version": "1.4.2", "team_manager_email": "jan@example.nl",
            "updated_at": "2027-01-15T09:30:00Z",
        ]
        let file = dir.appendingPathComponent("one.json")
        try JSONSerialization.data(withJSONObject: [row]).write(to: file)
        #expect(try await CLI.run(["backend", "import", file.path, "--db", db]).status == 0)

        let refused = try await Self.enroll(db, ["--device-id", "dev-x"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("error: Enrollment vvwilhelmus/dev-x already exists"))
        #expect(
            refused.stderr.contains("build_environment \"development\"") && refused.stderr.contains("app_version 1.4.2")
        )
        #expect(
            refused.stderr.contains("team_manager_email jan@example.nl")
                && refused.stderr.contains("nothing was changed"))
        #expect(refused.stderr.contains("Fix: Add --replace"))
        #expect(!refused.stderr.contains(String(repeating: "ab", count: 32)))
        let export = try await CLI.run(["backend", "export", "--db", db])
        #expect(export.stdout.contains(String(repeating: "ab", count: 32)) && export.stdout.contains("jan@example.nl"))

        let json = try await Self.enroll(db, ["--device-id", "dev-x", "--json"])
        #expect(json.status == 1)
        #expect(((try json.json())["error"] as? [String: Any])?["code"] as? String == "enrollment-exists")

        let replaced = try await Self.enroll(db, ["--device-id", "dev-x", "--replace"])
        #expect(replaced.status == 0)
        #expect(replaced.stdout.contains("enrolled vvwilhelmus/dev-x"))
        #expect(replaced.stdout.contains("replaced the enrollment it had: manager of JO11-3"))
        #expect(replaced.stdout.contains("its older JWTs are refused from now on"))

        // import replaces rows with the same tenant and device id, and says which.
        let again = try await CLI.run(["backend", "import", file.path, "--db", db])
        #expect(again.status == 0)
        #expect(again.stdout.contains("imported 1 enrollment(s) (0 new, 1 replaced: vvwilhelmus/dev-x)"))
        #expect(
            Self.flat(try await CLI.run(["backend", "import", "--help"]).stdout).contains(
                "replaces the enrollment with the same tenant_slug and device_id"))
    }

    // MARK: 2. --email for a member

    @Test(
        "backend enroll --email without --role manager is a usage error naming both flags; with it the e-mail is stored"
    )
    func enrollEmail() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("e.sqlite").path
        let member = try await Self.enroll(db, ["--email", "a@b.nl"])
        #expect(member.status == 64)
        #expect(
            member.stderr.contains("--email is a team manager's e-mail") && member.stderr.contains("Add --role manager")
        )
        let json = try await Self.enroll(db, ["--email", "a@b.nl", "--json"])
        #expect(json.status == 64)
        #expect((((try json.json())["error"] as? [String: Any])?["message"] as? String)?.contains("--email") == true)
        #expect(try await Self.enroll(db, ["--email", "not-an-address", "--role", "manager"]).status == 64)
        let manager = try await Self.enroll(db, ["--email", "a@b.nl", "--role", "manager", "--json"])
        #expect(manager.status == 0)
        #expect(((try manager.json())["enrollment"] as? [String: Any])?["team_manager_email"] as? String == "a@b.nl")
    }

    // MARK: 3. serve stops on SIGTERM

    @Test(
        "backend serve stops on SIGTERM and SIGINT with exit status 0, closing the database",
        arguments: [SIGTERM, SIGINT])
    func serveSignal(_ sig: Int32) async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("s.sqlite").path
        let (server, _, line) = try await CLI.startBackend(
            ["--db", db], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        defer { server.send(SIGKILL) }
        #expect(line.contains("kkpush backend listening on http://127.0.0.1:"))
        server.send(sig)
        let exited = await server.waitForExit(timeout: 20)
        let stderr = server.output.stderr
        #expect(exited, "backend serve did not stop within 20 s of the signal")
        #expect(server.status == 0, "\(stderr)")
        #expect(server.exitedNormally)
        #expect(
            stderr.contains("kkpush backend stopped (\(sig == SIGTERM ? "SIGTERM" : "SIGINT")); database \(db) closed"))
    }

    // MARK: 4, 5. export: a missing database, an output in a missing folder

    @Test(
        "backend export of a missing database says so and creates nothing; --output in a missing folder is named before any work"
    )
    func exportPaths() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("new.sqlite").path
        let r = try await CLI.run(["backend", "export", "--db", missing])
        #expect(r.status == 2)
        #expect(
            r.stderr.contains(
                "The enrollment database --db \(missing) does not exist (export reads a database; it does not create one)."
            ))
        #expect(!FileManager.default.fileExists(atPath: missing))
        // An empty file is not a database, and export (a read) leaves it empty.
        let empty = dir.appendingPathComponent("empty.sqlite").path
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let e = try await CLI.run(["backend", "export", "--db", empty])
        #expect(e.status == 2)
        #expect(
            e.stderr.contains("The enrollment database --db \(empty) is empty (0 bytes), not a database."),
            "\(e.stderr)")
        #expect((try FileManager.default.attributesOfItem(atPath: empty)[.size] as? NSNumber)?.intValue == 0)
        let help = try await CLI.run(["backend", "export", "--help"])
        #expect(
            Self.flat(help.stdout).contains("it must exist") && !Self.flat(help.stdout).contains("created if missing"))
        #expect(Self.flat(try await CLI.run(["backend", "enroll", "--help"]).stdout).contains("created if missing"))

        let db = dir.appendingPathComponent("e.sqlite").path
        #expect(try await Self.enroll(db, []).status == 0)
        let noFolder = dir.appendingPathComponent("nodir/x.json").path
        let out = try await CLI.run(["backend", "export", "--db", db, "-o", noFolder])
        #expect(out.status == 2)
        #expect(out.stderr.contains("The folder of the export file --output \(noFolder) does not exist"))
        #expect(!out.stderr.contains("NSCocoaErrorDomain"))
        let asFolder = try await CLI.run(["backend", "export", "--db", db, "-o", dir.path])
        #expect(asFolder.status != 0 && asFolder.stderr.contains("The export file --output \(dir.path) is a folder."))
        let ok = try await CLI.run(["backend", "export", "--db", db, "-o", dir.appendingPathComponent("x.json").path])
        #expect(ok.status == 0 && ok.stderr.contains("exported 1 enrollment(s)"))
    }

    @Test("--db that is a folder, a JSON file or a text file is named (exit 2); an empty --db is a usage error")
    func databasePaths() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("export.json")
        try Data("[]".utf8).write(to: json)
        let text = dir.appendingPathComponent("notes.txt")
        try Data("hello\n".utf8).write(to: text)
        let folderRun = try await CLI.run(["backend", "export", "--db", dir.path])
        #expect(folderRun.status == 2 && folderRun.stderr.contains("is a folder, not an SQLite file"))
        let jsonRun = try await Self.enroll(json.path, [])
        #expect(jsonRun.status == 2 && jsonRun.stderr.contains("is not an SQLite database (it looks like JSON"))
        let textRun = try await CLI.run(["backend", "import", json.path, "--db", text.path])
        #expect(textRun.status == 2 && textRun.stderr.contains("--db \(text.path) is not an SQLite database"))
        #expect(try String(contentsOf: text, encoding: .utf8) == "hello\n")
        #expect(try await Self.enroll("", []).status == 64)
        let missingFolder = try await Self.enroll(dir.appendingPathComponent("no/e.sqlite").path, [])
        #expect(missingFolder.status == 2 && missingFolder.stderr.contains("does not exist"))
    }

    // MARK: 6. import messages

    @Test(
        "backend import: empty file, an object, a bad enum value and a wrong type are named by entry and field",
        arguments: [
            ("", "is empty"),
            ("{\"a\": 1}", "the top level is an object; expected a JSON array of enrollments"),
            (
                "[{\"device_id\": \"d\", \"tenant_slug\": \"t\", \"team_codes\": [\"A\"], \"role\": \"member\", \"hardware_identifier\": \"h\", \"updated_at\": \"2027-01-15T09:30:00Z\", \"status\": \"weird\"}]",
                "[0].status is \"weird\"; expected one of: active, revoked"
            ),
            (
                "[{\"device_id\": \"d\", \"tenant_slug\": \"t\", \"team_codes\": \"A\", \"role\": \"member\", \"hardware_identifier\": \"h\", \"updated_at\": \"2027-01-15T09:30:00Z\"}]",
                "[0].team_codes has the wrong type: expected an array"
            ),
            ("[{\"device_id\": \"d\"}]", "[0].tenant_slug is missing"),
            ("[{\"device_id\": ", "it is not valid JSON"),
            (
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
                "it is PEM (a key or a certificate), not JSON"
            ),
        ])
    func importMessages(_ content: String, _ words: String) async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("in.json")
        try Data(content.utf8).write(to: file)
        let r = try await CLI.run(["backend", "import", file.path, "--db", dir.appendingPathComponent("e.sqlite").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(!r.stderr.contains("Cannot initialize") && !r.stderr.contains("invalid: :"))
        let stdin = try await CLI.run(
            ["backend", "import", "-", "--db", dir.appendingPathComponent("e.sqlite").path], stdin: content)
        #expect(stdin.status == 2 && stdin.stderr.contains(content.isEmpty ? "Standard input is empty" : words))
    }

    // MARK: 7, 8. simulate

    @Test(
        "simulate --json says what ok means and reports the latency goal as met or not; --help says it leaves the exit status alone"
    )
    func simulateLatencyGoal() async throws {
        let r = try await CLI.run(["simulate", "--devices", "2", "--json"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let json = try r.json()
        #expect(json["ok"] as? Bool == true)
        #expect((json["ok_means"] as? String)?.contains("every push was accepted") == true)
        #expect(json["latency_goal_ms"] as? Double == 100)
        let p99 = try #require((json["latency_ms"] as? [String: Any])?["p99"] as? Double)
        #expect(json["latency_goal_met"] as? Bool == (p99 <= 100))
        let text = try await CLI.run(["simulate", "--devices", "2"], timeout: 120)
        #expect(text.stdout.contains("latency goal p99 ≤ 100 ms: "))
        let help = try await CLI.run(["simulate", "--help"])
        #expect(
            Self.flat(help.stdout).contains("latency_goal_met")
                && Self.flat(help.stdout).contains("does not change the exit status"))
    }

    @Test(
        "simulate: --devices out of range, an unknown scenario and a bad --certificates are named",
        arguments: [
            (["simulate", "--devices", "0"], Int32(64), "--devices 0 is out of range"),
            (["simulate", "--devices", "-1"], 64, "--devices -1 is out of range"),
            (["simulate", "--devices", "nan"], 64, "nan"),
            (["simulate", "--devices", "99999999"], 64, "out of range"),
            (["simulate", "--scenario", "nosuch"], 64, "server-apns-env-override, primary-token"),
            (
                ["simulate", "--certificates", "/nonexistent-kkpush"], 2,
                "--certificates /nonexistent-kkpush does not exist"
            ),
        ])
    func simulateBadFlags(_ args: [String], _ status: Int32, _ words: String) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == status)
        #expect(r.stderr.contains(words), "\(r.stderr)")
    }

    @Test("simulate --scenario all: no sentence is printed twice within a scenario")
    func scenarioTexts() async throws {
        let r = try await CLI.run(["simulate", "--scenario", "all", "--json"], timeout: 180)
        #expect(r.status == 0, "\(r.stderr)")
        let scenarios = try #require(try r.json()["scenarios"] as? [[String: Any]])
        // Every scenario `all` names (SimulationScenario lists them), each once.
        #expect(
            scenarios.compactMap { $0["scenario"] as? String }.count
                == SimulationScenario.allCases.count, "\(scenarios.count) scenarios")
        for s in scenarios {
            let text = ["expected", "observed", "why", "fix"].compactMap { s[$0] as? String }.joined(separator: " ")
            let sentences = text.split(separator: ".").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                $0.count > 20
            }
            #expect(Set(sentences).count == sentences.count, "\(s["scenario"] ?? ""): \(text)")
            #expect(!text.contains("  "))
        }
        let override = try await CLI.run(["simulate", "--scenario", "server-apns-env-override"], timeout: 120)
        #expect(override.stdout.components(separatedBy: "(to the app it looks like an APNs timeout)").count == 2)
    }

    // MARK: 9. demo

    @Test("demo: a fix shown works under the row's overrides; APNS_ENV in this process adds its own setup")
    func demoFixes() async throws {
        let r = try await CLI.run(["demo", "--json"], environment: ["APNS_ENV": "production"])
        #expect(r.status == 0)
        let rows = try #require(try r.json()["rows"] as? [[String: Any]])
        let logging = rows.filter {
            $0["scheme"] as? String == "release-with-logging"
                && $0["server"] as? String == "APNS_ENV=production (legacy)"
        }
        let fix = try #require(logging.first?["fix"] as? String)
        #expect(fix.contains("fly secrets unset APNS_ENV") && fix.contains("getBuildEnvironment()"))
        #expect(fix.contains("Either alone still sends this build's pushes to production"))
        #expect(
            rows.contains {
                ($0["server"] as? String)?.contains("this process's environment: APNS_ENV=production") == true
            })
        let auto = rows.first {
            $0["scheme"] as? String == "release-with-logging"
                && $0["server"] as? String == "auto-detection (recommended)"
        }
        #expect((auto?["fix"] as? String)?.hasPrefix("Make getBuildEnvironment() return \"development\"") == true)
        for row in rows where row["delivers"] as? Bool == true { #expect(row["fix"] is NSNull) }
        let plain = try await CLI.run(["demo"])
        #expect(!plain.stdout.contains("this process's environment"))
    }

    // MARK: 10. the sweep

    @Test("backend serve: a missing --import or --ca-file is named before the server starts (exit 2)")
    func serveInputs() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("s.sqlite").path
        let noImport = try await CLI.run(
            ["backend", "serve", "--port", "0", "--db", db, "--import", dir.appendingPathComponent("none.json").path],
            environment: Self.env, timeout: 20)
        #expect(noImport.status == 2 && noImport.stderr.contains("The enrollments file --import"))
        let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
        let noCA = try await CLI.run(
            [
                "backend", "serve", "--port", "0", "--db", db, "--key", key, "--key-id", "KKTEST0001",
                "--team-id", "KKTEAM0001", "--sandbox-url", "https://127.0.0.1:2197", "--ca-file",
                dir.appendingPathComponent("none.crt").path,
            ],
            environment: Self.env, timeout: 20)
        #expect(noCA.status == 2 && noCA.stderr.contains("The CA file --ca-file"))
        #expect(!noCA.stdout.contains("listening"))
    }

    @Test(
        "backend serve: bad port, short admin token, secret too short are usage errors naming the flag",
        arguments: [
            (["backend", "serve", "--port", "70000"], "--port 70000 is out of range"),
            (["backend", "serve", "--port", "-1"], "--port -1 is out of range"),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", "A", "--hardware-identifier", phone, "--days", "-5"],
                "--days -5 is out of range"
            ),
            (["backend", "serve", "--port", "0", "--admin-token", "abc"], "it needs at least 16"),
            (["backend", "serve", "--port", "0", "--secret", "short"], "The device-JWT secret (--secret) is 5 bytes"),
            (
                ["backend", "enroll", "--tenant", "", "--teams", "A", "--hardware-identifier", phone],
                "--tenant is empty"
            ),
            (
                [
                    "backend", "enroll", "--tenant", "t", "--teams", "A", "--hardware-identifier", phone, "--role",
                    "bogus",
                ], "--role must be manager or member"
            ),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", "A,B,C,D,E,F", "--hardware-identifier", phone],
                "--teams has 6 team codes; the app allows at most 5"
            ),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", "A,A", "--hardware-identifier", phone],
                "--teams has A twice"
            ),
            (
                ["backend", "enroll", "--tenant", "VV Wilhelmus", "--teams", "A", "--hardware-identifier", phone],
                "--tenant \"VV Wilhelmus\" has characters other than"
            ),
            (
                [
                    "backend", "enroll", "--tenant", "t", "--teams", "A", "--hardware-identifier", phone, "--device-id",
                    "a/b",
                ], "--device-id \"a/b\" has characters other than"
            ),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", ",", "--hardware-identifier", phone],
                "--teams needs at least one team code"
            ),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", "A", "--hardware-identifier", phone, "--replace"],
                "--replace goes with --device-id"
            ),
            (
                ["backend", "enroll", "--tenant", "t", "--teams", "A", "--hardware-identifier", phone, "--days", "0"],
                "--days 0 is out of range"
            ),
        ])
    func usageErrors(_ args: [String], _ words: String) async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try await CLI.run(
            args + ["--db", dir.appendingPathComponent("e.sqlite").path], environment: Self.env, timeout: 20)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
    }
}
