import Foundation
import Testing

/// "Every answer true" for `kkpush diagnose`, `env *` and `token *`: bad input is never a silent pass,
/// never a crash, and text and JSON say the same.
@Suite("Answers: diagnose, env, token")
struct AnswersDiagnoseEnvTokenCLITests {
    static let token = "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6"

    /// A temporary folder with the fixtures, removed afterwards.
    struct Fixtures {
        let dir: URL
        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-answers-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try write("body.json", Self.body(build: "development"))
            try write("bodyD.json", Self.body(build: "Development"))
            try write("bodyS.json", Self.body(build: "staging"))
            try write("empty.json", "")
            try write("array.json", "[1, 2]")
            try write("binary.json", String(decoding: [0xff, 0xfe, 0x00, 0x41, 0x9c], as: UTF8.self))
            try write(
                "enrollment-wrong-type.json",
                #"""
                {"device_id": "d1", "tenant_slug": "club", "team_codes": ["A1"], "role": "manager",
                 "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C", "is_test_user": "yes",
                 "updated_at": "2027-01-15T09:30:00Z"}
                """#)
            try FileManager.default.createDirectory(
                at: dir.appendingPathComponent("folder"), withIntermediateDirectories: true)
        }
        static func body(build: String) -> String {
            #"{"token":"\#(AnswersDiagnoseEnvTokenCLITests.token)","build_environment":"\#(build)","app_version":"1.4.2","hardware_identifier":"8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"}"#
        }
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: dir.appendingPathComponent(name))
        }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        func remove() { try? FileManager.default.removeItem(at: dir) }
    }

    static let quiet = ["--ignore-process-env"]

    // MARK: 1. The request, judged with the pre-flight's rules

    @Test("diagnose judges push type and priority as send's pre-flight does (text and JSON agree)")
    func requestRules() async throws {
        let f = try Fixtures()
        defer { f.remove() }
        let cases: [(args: [String], words: String, reason: String)] = [
            (
                ["--push-type", "backgroud"], "apns-push-type 'backgroud' is not a push type APNs knows",
                "InvalidPushType"
            ),
            (["--priority", "7"], "apns-priority is 7; APNs accepts 1, 5 or 10", "BadPriority"),
            (["--expiration=-3"], "apns-expiration is -3", "BadExpirationDate"),
            (
                ["--collapse-id", String(repeating: "c", count: 65)],
                "apns-collapse-id is 65 bytes (UTF-8), over the 64-byte limit", "BadCollapseId"
            ),
        ]
        for c in cases {
            let args = ["diagnose", "--token-update", f.path("body.json")] + Self.quiet + c.args
            let text = try await CLI.run(args)
            #expect(text.status == 1, "\(c.args): \(text.stdout) \(text.stderr)")
            #expect(text.stdout.contains("Verdict: request-invalid: \(c.words)"), "\(text.stdout)")
            #expect(text.stdout.contains("APNs answers 400 \(c.reason)"))
            let json = try await CLI.run(args + ["--json"])
            #expect(json.status == 1)
            let verdict = try #require(try json.json()["verdict"] as? [String: Any])
            #expect(verdict["code"] as? String == "request-invalid")
            #expect((verdict["message"] as? String)?.contains(c.words) == true)
        }
        // A topic that does not fit the push type: the same stage-4 rule as the pre-flight.
        let voip = try await CLI.run(
            ["diagnose", "--token", Self.token, "--topic", "nl.kantinekoning.app", "--push-type", "voip"] + Self.quiet)
        #expect(voip.status == 1)
        #expect(
            voip.stdout.contains("Verdict: topic-suffix: apns-topic 'nl.kantinekoning.app' lacks the '.voip' suffix"))
        // A good request is still fine.
        let fine = try await CLI.run(
            ["diagnose", "--token-update", f.path("body.json"), "--push-type", "background", "--priority", "5"]
                + Self.quiet)
        #expect(fine.status == 0, "\(fine.stdout)")
        #expect(fine.stdout.contains("Verdict: nothing found that blocks delivery."))
    }

    // MARK: 2. Nothing to judge

    @Test("diagnose with no input is a usage error that lists the inputs")
    func noInput() async throws {
        let r = try await CLI.run(["diagnose", "--ignore-process-env"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("error: diagnose has nothing to judge: no input was given."))
        #expect(r.stderr.contains("Fix: Give at least one: an enrollment (--enrollment FILE"))
        #expect(r.stderr.contains("--token-update FILE"))
        #expect(!r.stdout.contains("nothing found"))
        let j = try await CLI.run(["diagnose", "--json", "--ignore-process-env"])
        #expect(j.status == 64)
        let error = try #require(try j.json()["error"] as? [String: Any])
        #expect(error["code"] as? String == "diagnose-no-input")
    }

    // MARK: 3 and 5. Numbers

    @Test(
        "diagnose's numeric flags: out-of-range values name the flag and the real range",
        arguments: [
            (
                ["--token-refresh-minutes=-5"],
                "--token-refresh-minutes -5 is out of range: give a number of minutes from 0.1 to 10080."
            ),
            (
                ["--token-refresh-minutes", "nan"],
                "--token-refresh-minutes nan is out of range: give a number of minutes from 0.1 to 10080."
            ),
            (["--token-refresh-minutes", "inf"], "--token-refresh-minutes inf is out of range"),
            (["--timeout", "0"], "--timeout 0 is out of range: give a number of seconds from 0.001 to 120."),
            (
                ["--timeout", "121", "--probe"],
                "--timeout 121 is out of range: give a number of seconds from 0.001 to 120."
            ),
            (["--now=-1"], "--now -1 is not a UNIX time kkpush accepts"),
            (["--port", "8443", "--probe"], "--port must be 443 or 2197"),
            (["--expiration", "99999999999999"], "--expiration 99999999999999 is not a UNIX time kkpush accepts"),
        ])
    func numbers(_ args: [String], _ words: String) async throws {
        let r = try await CLI.run(["diagnose", "--token", Self.token] + args)
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(!r.stdout.contains("every -"))
    }

    @Test("probe-only flags without --probe, and empty values, are usage errors")
    func flagsThatDoNothing() async throws {
        let r = try await CLI.run(["diagnose", "--token", Self.token, "--sandbox-url", "https://127.0.0.1:2197"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--sandbox-url is for --probe only"))
        let empty = try await CLI.run(["diagnose", "--topic", "", "--token", Self.token])
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("--topic is given an empty value"))
        let tv = try await CLI.run(["token", "verify", "-", "--tenant", ""], stdin: Fixtures.body(build: "production"))
        #expect(tv.status == 64)
        #expect(tv.stderr.contains("--tenant is given an empty value"))
        let lv = try await CLI.run(["env", "resolve", "--logging-variant", "development"])
        #expect(lv.status == 64)
        #expect(lv.stderr.contains("--logging-variant is for --scheme release-with-logging only"))
    }

    @Test(
        "flags that would do nothing, or a bad URL, are usage errors naming the flag",
        arguments: [
            (
                ["diagnose", "--token", token, "--ca-file", "ca.crt", "--probe"],
                "--ca-file is the CA of a stand-in given with --sandbox-url or --production-url"
            ),
            (
                ["diagnose", "--token", token, "--probe", "--sandbox-url", "ftp://127.0.0.1"],
                "--sandbox-url: The URL 'ftp://127.0.0.1' is not https"
            ),
            (
                ["diagnose", "--token", token, "--probe", "--production-url", "https://127.0.0.1:0"],
                "--production-url: The URL 'https://127.0.0.1:0' has an invalid port."
            ),
            (
                ["diagnose", "--store", "x.sqlite", "--email", "a@example.com", "--tenant", "club"],
                "--tenant narrows a --device-id lookup"
            ),
            (
                ["diagnose", "--token", token, "--key-environment", "sandbox", "--ignore-process-env"],
                "--key-environment says which environment the provider key is enabled for, but no key is given."
            ),
            (
                ["diagnose", "--token", token, "--cert-key", "k.pem"],
                "--cert-key is the private key of a PEM --cert: give --cert too."
            ),
            (
                ["token", "verify", "body.json", "--tenant", "club"],
                "--tenant is checked against the bearer's tenant_slug"
            ),
            (
                ["token", "verify", "body.json", "--secret", "0123456789abcdef0123"],
                "--secret and --secret-file check the bearer's signature"
            ),
        ])
    func uselessFlags(_ args: [String], _ words: String) async throws {
        let r = try await CLI.run(args, environment: ["KKPUSH_BEARER": "", "APNS_KEY_PATH": "", "APNS_KEY": ""])
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
    }

    @Test("stdin for two inputs, or for a flag that does not read it, is a usage error")
    func stdinConflicts() async throws {
        let two = try await CLI.run(["diagnose", "--token-update", "-", "--enrollment", "-"], stdin: "{}")
        #expect(two.status == 64)
        #expect(two.stderr.contains("Only one input can come from stdin ('-'), not --token-update and --enrollment."))
        let store = try await CLI.run(["diagnose", "--store", "-", "--email", "a@example.com"])
        #expect(store.status == 64)
        #expect(store.stderr.contains("--store does not read standard input ('-')"))
    }

    @Test("standard input is read once, however many enrollments a lookup finds")
    func stdinOnceForSeveralEnrollments() async throws {
        let f = try Fixtures()
        defer { f.remove() }
        let db = f.path("store.sqlite")
        let secret = ["KKPUSH_BACKEND_SECRET": "0123456789abcdef0123456789abcdef"]
        for tenant in ["club-a", "club-b"] {
            let e = try await CLI.run(
                [
                    "backend", "enroll", "--db", db, "--tenant", tenant, "--teams", "JO11-3",
                    "--hardware-identifier", "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                ], environment: secret)
            #expect(e.status == 0, "\(e.stderr)")
        }
        let r = try await CLI.run(
            [
                "diagnose", "--store", db, "--hardware-identifier", "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                "--token-update", "-", "--ignore-process-env",
            ], stdin: Fixtures.body(build: "development"))
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(
            r.stdout.components(separatedBy: "Verdict: nothing found that blocks delivery.").count == 3, "\(r.stdout)")
    }

    @Test("a bad --proxy is a usage error (64), not an unchecked path")
    func badProxy() async throws {
        let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
        let r = try await CLI.run([
            "diagnose", "--probe", "--token", Self.token, "--key", key, "--key-id", "KKTEST0001", "--team-id",
            "KKTEAM0001",
            "--sandbox-url", "https://127.0.0.1:1", "--production-url", "https://127.0.0.1:2", "--proxy", "bogus proxy",
            "--timeout", "2", "--ignore-process-env",
        ])
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("error: --proxy: The proxy URL 'bogus proxy' has no scheme libcurl can use."))
    }

    @Test("an enrollment array names the entry and the field at fault")
    func enrollmentEntries() async throws {
        let f = try Fixtures()
        defer { f.remove() }
        let good =
            #"{"device_id": "d1", "tenant_slug": "club", "team_codes": ["A1"], "role": "manager", "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C", "updated_at": "2027-01-15T09:30:00Z"}"#
        let bad = good.replacingOccurrences(of: #""role": "manager""#, with: #""role": "boss""#)
        try f.write("two.json", "[\(good), \(bad)]")
        let r = try await CLI.run(["diagnose", "--enrollment", f.path("two.json"), "--ignore-process-env"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("entry [1]: the field 'role' must be \"manager\" or \"member\"."))
        try f.write("gen.json", good.replacingOccurrences(of: "}", with: #", "generation": 1.5}"#))
        let g = try await CLI.run(["token", "verify", f.path("body.json"), "--enrollment", f.path("gen.json")])
        #expect(g.status == 2)
        #expect(g.stderr.contains("the field 'generation' must be a whole number from 1 to 2147483647."))
    }

    @Test("a provider token that is not an ES256 APNs token is a finding, even without the key")
    func providerTokenShape() async throws {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(
                of: "+", with: "-"
            )
            .replacingOccurrences(of: "/", with: "_")
        }
        let hs256 = b64(#"{"alg":"HS256","typ":"JWT"}"#) + "." + b64(#"{"device_id":"d1","iat":1700000000}"#) + ".c2ln"
        let r = try await CLI.run([
            "diagnose", "--provider-token", hs256, "--now", "1700000100", "--ignore-process-env",
        ])
        #expect(r.status == 1)
        #expect(
            r.stdout.contains("Verdict: key-invalid: The provider token does not verify: Its alg is 'HS256', not ES256")
        )
    }

    // MARK: 4. One build_environment judgement

    @Test(
        "\"Development\": the warning build-environment-not-normalized from env resolve, token verify and diagnose alike"
    )
    func buildEnvironmentNearMiss() async throws {
        let f = try Fixtures()
        defer { f.remove() }
        let env = try await CLI.run(["env", "resolve", "--build-environment", "Development", "--json"])
        #expect(env.status == 0)
        let envWarnings = try #require(try env.json()["warnings"] as? [[String: Any]])
        #expect(envWarnings.map { $0["code"] as? String } == ["build-environment-not-normalized"])
        #expect(envWarnings.first?["severity"] as? String == "warning")

        let verify = try await CLI.run(["token", "verify", f.path("bodyD.json"), "--json"])
        #expect(verify.status == 0, "\(verify.stdout)")
        let vj = try verify.json()
        #expect(vj["valid"] as? Bool == true)
        let problems = try #require(vj["problems"] as? [[String: Any]])
        #expect(problems.map { $0["code"] as? String } == ["build-environment-not-normalized"])
        #expect(problems.first?["severity"] as? String == "warning")
        let verifyText = try await CLI.run(["token", "verify", f.path("bodyD.json")])
        #expect(verifyText.stdout.contains("token update: valid (0 errors, 1 warning)"))
        #expect(
            verifyText.stdout.contains(
                "warning build-environment-not-normalized: build_environment \"Development\" differs from \"development\" only in case or white space"
            ))

        for args in [["--token-update", f.path("bodyD.json")], ["--build-environment", "Development"]] {
            let d = try await CLI.run(["diagnose", "--json"] + Self.quiet + args)
            #expect(d.status == 0, "\(d.stdout)")
            let dj = try d.json()
            #expect(dj["verdict"] is NSNull)
            let findings = try #require(dj["findings"] as? [[String: Any]])
            #expect(
                findings.contains {
                    $0["code"] as? String == "build-environment-not-normalized"
                        && $0["severity"] as? String == "warning"
                })
            #expect(!findings.contains { $0["code"] as? String == "build-environment-unknown" })
        }
        // A value outside the contract is the same error in all three (env resolve still exits 0).
        let envS = try await CLI.run(["env", "resolve", "--build-environment", "staging", "--json"])
        #expect(envS.status == 0)
        #expect((try envS.json()["warnings"] as? [[String: Any]])?.first?["severity"] as? String == "error")
        let verifyS = try await CLI.run(["token", "verify", f.path("bodyS.json")])
        #expect(verifyS.status == 1)
        #expect(
            verifyS.stdout.contains(
                "error build-environment-unknown: build_environment \"staging\" is not a value the backend knows"))
        let diagS = try await CLI.run(["diagnose", "--build-environment", "staging"] + Self.quiet)
        #expect(diagS.status == 1)
        #expect(
            diagS.stdout.contains(
                "Verdict: build-environment-unknown: build_environment \"staging\" is not a value the backend knows"))
    }

    // MARK: 6. env schemes

    @Test("env schemes: every column of every row is separated; the mismatch cells are marked")
    func schemesTable() async throws {
        let r = try await CLI.run(["env", "schemes"])
        #expect(r.status == 0)
        let rows = r.stdout.split(separator: "\n").map(String.init)
        let header = Array(try #require(rows.first))
        let distColumn = try #require((0..<header.count).first { String(header[$0...]).hasPrefix("distribution") })
        let table = rows.dropFirst().prefix(20)
        #expect(table.count == 20)
        for row in table {
            let chars = Array(row)
            #expect(chars[distColumn - 1] == " ", "\(row)")
            let cell = String(chars[distColumn...])
            #expect(
                ["run from Xcode", "ad hoc", "enterprise", "TestFlight", "App Store"].contains { cell.hasPrefix($0) },
                "\(row)")
        }
        // The two cells of the issue: a Debug build on TestFlight, a Release build run from Xcode.
        #expect(
            table.contains {
                $0.hasPrefix("release-testing (Debug)") && $0.contains("TestFlight") && $0.contains("✗ MISMATCH")
            })
        #expect(
            table.contains {
                $0.hasPrefix("release (Release)") && $0.contains("run from Xcode") && $0.contains("✗ MISMATCH")
            })
        #expect(!table.contains { $0.hasPrefix("release (Release)") && $0.contains("App Store") && $0.contains("✗") })
        #expect(r.stdout.contains("the fixed app (aps_environment sent) routes all 20 right"))
        let j = try await CLI.run(["env", "schemes", "--json"])
        #expect(j.status == 0)
        #expect(try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) is [Any])
    }

    // MARK: 8. File inputs

    @Test("every file input: missing, empty, a folder, the wrong shape (exit 2, named)")
    func fileInputs() async throws {
        let f = try Fixtures()
        defer { f.remove() }
        let cases: [(args: [String], words: String)] = [
            (
                ["diagnose", "--token-update", f.path("missing.json")],
                "The token-update body --token-update \(f.path("missing.json")) does not exist."
            ),
            (["diagnose", "--token-update", f.path("empty.json")], "is empty."),
            (["diagnose", "--token-update", f.path("folder")], "is a folder, not a file."),
            (["diagnose", "--token-update", f.path("array.json")], "is an array, not a JSON object."),
            (["diagnose", "--token-update", f.path("binary.json")], "is not JSON"),
            (["diagnose", "--enrollment", f.path("array.json")], "entry [0] is a number, not an enrollment object."),
            (
                ["diagnose", "--enrollment", f.path("enrollment-wrong-type.json")],
                "the field 'is_test_user' is not true or false."
            ),
            (["diagnose", "--enrollment", f.path("body.json")], "lacks the required field 'device_id'."),
            (["diagnose", "--store", f.path("body.json"), "--email", "a@example.com"], "is not an SQLite database."),
            (
                ["diagnose", "--store", f.path("empty.json"), "--email", "a@example.com"],
                "is empty (0 bytes), not a database."
            ),
            (["diagnose", "--store", f.path("folder"), "--email", "a@example.com"], "is a folder, not a file."),
            (["diagnose", "--payload", f.path("folder"), "--token", Self.token], "is a folder, not a file."),
            (
                ["diagnose", "--key", f.path("missing.p8"), "--key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ"],
                "does not exist."
            ),
            (["token", "verify", f.path("missing.json")], "does not exist."),
            (["token", "verify", f.path("array.json")], "is an array, not a JSON object."),
            (["token", "verify", f.path("folder")], "is a folder, not a file."),
            (
                ["token", "verify", f.path("body.json"), "--enrollment", f.path("enrollment-wrong-type.json")],
                "the field 'is_test_user' is not true or false."
            ),
            (
                ["token", "verify", f.path("body.json"), "--db", f.path("empty.json"), "--bearer", "a.b.c"],
                "is empty (0 bytes), not a database."
            ),
        ]
        for c in cases {
            let r = try await CLI.run(c.args + (c.args[0] == "diagnose" ? Self.quiet : []))
            #expect(r.status == 2, "\(c.args): \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("error: ") && r.stderr.contains(c.words), "\(c.args): \(r.stderr)")
            #expect(r.stderr.contains("Fix: "))
            #expect(!r.stderr.contains("NSCocoaErrorDomain") && !r.stderr.contains("Expected to decode"))
            let j = try await CLI.run(c.args + ["--json"] + (c.args[0] == "diagnose" ? Self.quiet : []))
            #expect(j.status == 2)
            let error = try #require(try j.json()["error"] as? [String: Any], "\(j.stdout)")
            #expect((error["message"] as? String)?.contains(c.words) == true)
        }
        // A file with SQLite's header but corrupt: an input error naming the flag, without nested library text.
        try f.write("corrupt.db", "SQLite format 3\u{0}" + String(repeating: "garbage ", count: 600))
        for args in [
            ["diagnose", "--store", f.path("corrupt.db"), "--email", "a@example.com", "--ignore-process-env"],
            ["token", "verify", f.path("body.json"), "--db", f.path("corrupt.db"), "--bearer", "a.b.c"],
        ] {
            let r = try await CLI.run(args)
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr.contains("cannot be opened as an enrollment database"), "\(r.stderr)")
            #expect(r.stderr.components(separatedBy: "Fix:").count == 2, "one Fix line: \(r.stderr)")
        }
        // The empty file given as --store is not turned into a database.
        let size = try FileManager.default.attributesOfItem(atPath: f.path("empty.json"))[.size] as? Int
        #expect(size == 0)
        // Standard input, empty.
        for args in [["token", "verify", "-"], ["diagnose", "--token-update", "-", "--ignore-process-env"]] {
            let r = try await CLI.run(args, stdin: "")
            #expect(r.status == 2)
            #expect(r.stderr.contains("Standard input is empty; a token-update body was expected."))
        }
    }

    @Test("a token update's fields of the wrong type are named (a verdict, exit 1)")
    func wrongFieldTypes() async throws {
        let body =
            #"{"token": 5, "build_environment": true, "app_version": "1.4.2", "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"}"#
        let r = try await CLI.run(["token", "verify", "-"], stdin: body)
        #expect(r.status == 1)
        #expect(r.stdout.contains("error wrong-type: The field 'token' is a number, not a string."))
        #expect(r.stdout.contains("error wrong-type: The field 'build_environment' is a boolean, not a string."))
        let d = try await CLI.run(["diagnose", "--token-update", "-", "--json", "--ignore-process-env"], stdin: body)
        #expect(d.status == 1)
        let findings = try #require(try d.json()["findings"] as? [[String: Any]])
        #expect(findings.contains { ($0["message"] as? String)?.contains("The field 'token' is a number") == true })
    }
}
