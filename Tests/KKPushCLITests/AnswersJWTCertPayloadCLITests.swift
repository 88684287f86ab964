import Foundation
import KKPushCore
import KKPushMock
import Testing

/// "Every answer true" for `jwt`, `cert`, `payload`, `version` and the shared error reporting, through
/// the command line: every bad flag value and every unusable file gets an error naming it, with the exit
/// code of the README's table, and every verdict says what APNs would do.
@Suite("kkpush jwt, cert and payload: every answer true")
struct AnswersJWTCertPayloadCLITests {
    static let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
    static let key2 = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0002.p8").path
    static let ca = CLI.certificates.appendingPathComponent("ca.crt").path
    static let p12 = CLI.certificates.appendingPathComponent("client-development.p12").path
    static let credentials = ["--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"]
    static let topic = "nl.kantinekoning.app"

    /// A fresh temporary folder.
    static func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-answers-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A file named `name` in a fresh temporary folder holding `bytes` (mode 600).
    static func file(_ bytes: [UInt8], name: String = "file") throws -> String {
        let url = try folder().appendingPathComponent(name)
        try Data(bytes).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        return url.path
    }

    static func file(_ text: String, name: String = "file") throws -> String { try file(Array(text.utf8), name: name) }

    static func sign(_ extra: [String]) async throws -> String {
        let r = try await CLI.run(["jwt", "sign"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func errorObject(_ r: CLIResult) throws -> [String: Any] {
        try #require(try r.json()["error"] as? [String: Any], "stdout: \(r.stdout) stderr: \(r.stderr)")
    }

    // MARK: 1. Numeric flags are range-checked

    @Test(
        "Numeric flags out of range: 64, naming the flag and the range",
        arguments: [
            (["jwt", "verify", "a.b.c", "--key", key, "--max-age=-5"], "--max-age -5 is out of range"),
            (["jwt", "verify", "a.b.c", "--key", key, "--max-age=0"], "--max-age 0 is out of range"),
            (["jwt", "verify", "a.b.c", "--key", key, "--max-age=31536001"], "--max-age 31536001 is out of range"),
            (["jwt", "verify", "a.b.c", "--key", key, "--now=-1"], "--now -1 is not a UNIX time"),
            (["jwt", "decode", "a.b.c", "--now=253402300800"], "--now 253402300800 is not a UNIX time"),
            (["jwt", "sign", "--issued-at=-1"] + credentials, "--issued-at -1 is not a UNIX time"),
            (["jwt", "bench", "--seconds=nan"], "--seconds nan is out of range"),
            (["jwt", "bench", "--seconds=-1"], "--seconds -1 is out of range"),
            (["jwt", "bench", "--seconds=inf"], "--seconds inf is out of range"),
            (["cert", "inspect", p12, "--password", "kkpush", "--now=-5"], "--now -5 is not a UNIX time"),
            (["payload", "build", "--body", "x", "--badge=-1"], "--badge -1 is out of range"),
        ])
    func numericFlags(args: [String], words: String) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == 64, "\(args): \(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
    }

    // MARK: 2. jwt verify: swapped ids are a verdict

    @Test("jwt verify: a token with key id and team id swapped verifies but is a verdict (1), text and JSON agree")
    func swappedIDs() async throws {
        let signed = try await CLI.run([
            "jwt", "sign", "--key", Self.key, "--key-id", "KKTEAM0001", "--team-id", "KKTEST0001",
        ])
        #expect(signed.status == 0)
        #expect(signed.stderr.contains("key-team-swapped"))
        let token = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let text = try await CLI.run(["jwt", "verify", token, "--key", Self.key])
        #expect(text.status == 1, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("invalid key-team-swapped: signature valid, but APNs will reject it"))
        #expect(text.stdout.contains("403 InvalidProviderToken"))
        // The library's placeholders, `(jwtSignCommand)` and `(keyID)`, in this command line's words.
        #expect(
            text.stdout.contains(
                "Sign a new token (kkpush jwt sign) with the key AuthKey_KKTEST0001.p8 (--key), its key id KKTEST0001 as kid (--key-id)"
            ), "\(text.stdout)")
        #expect(!text.stdout.contains("valid: kid"))

        let json = try await CLI.run(["jwt", "verify", token, "--key", Self.key, "--json"])
        #expect(json.status == 1)
        let object = try json.json()
        #expect(object["valid"] as? Bool == false)
        #expect(object["signature_valid"] as? Bool == true)
        #expect(object["code"] as? String == "key-team-swapped")
        #expect(object["apns_reason"] as? String == "InvalidProviderToken")
        #expect((object["message"] as? String)?.contains("APNs will reject") == true)
        #expect((object["fix"] as? String)?.isEmpty == false)
    }

    @Test("jwt verify: kid of another key file is a verdict; the right ids are valid (0)")
    func keyIDMismatchAndValid() async throws {
        let other = try await Self.sign(["--key", Self.key, "--key-id", "KKTEST0002", "--team-id", "KKTEAM0001"])
        let mismatch = try await CLI.run(["jwt", "verify", other, "--key", Self.key, "--json"])
        #expect(mismatch.status == 1)
        #expect(try mismatch.json()["code"] as? String == "key-id-mismatch")

        let good = try await Self.sign(Self.credentials)
        let valid = try await CLI.run(["jwt", "verify", good, "--key", Self.key])
        #expect(valid.status == 0, "\(valid.stdout) \(valid.stderr)")
        #expect(valid.stdout.hasPrefix("valid: kid KKTEST0001, iss KKTEAM0001"))
        let validJSON = try await CLI.run(["jwt", "verify", good, "--key", Self.key, "--json"])
        #expect(validJSON.status == 0)
        #expect(try validJSON.json()["valid"] as? Bool == true)
        #expect(try validJSON.json()["signature_valid"] as? Bool == true)

        let wrongKey = try await CLI.run(["jwt", "verify", good, "--key", Self.key2, "--json"])
        #expect(wrongKey.status == 1)
        #expect(try wrongKey.json()["code"] as? String == "bad-signature")
        #expect(try wrongKey.json()["signature_valid"] as? Bool == false)
    }

    @Test(
        "jwt verify --max-age above an hour: valid by the flag, with a note that APNs itself would answer ExpiredProviderToken"
    )
    func maxAgeAboveAPNs() async throws {
        let token = try await Self.sign(Self.credentials + ["--issued-at", "1700000000"])
        let text = try await CLI.run([
            "jwt", "verify", token, "--key", Self.key, "--now", "1700005000", "--max-age", "7200",
        ])
        #expect(text.status == 0)
        #expect(text.stdout.contains("APNs itself would answer 403 ExpiredProviderToken"))
        let json = try await CLI.run([
            "jwt", "verify", token, "--key", Self.key, "--now", "1700005000", "--max-age", "7200", "--json",
        ])
        #expect((try json.json()["note"] as? String)?.contains("ExpiredProviderToken") == true)
        let apns = try await CLI.run(["jwt", "verify", token, "--key", Self.key, "--now", "1700005000", "--json"])
        #expect(apns.status == 1)
        #expect(try apns.json()["apns_reason"] as? String == "ExpiredProviderToken")
    }

    @Test("jwt sign: a key id or team id not of Apple's form is refused (64); a swap is a warning")
    func signIDFormat() async throws {
        let short = try await CLI.run([
            "jwt", "sign", "--key", Self.key, "--key-id", "KKTEST001", "--team-id", "KKTEAM0001",
        ])
        #expect(short.status == 64, "\(short.stderr)")
        #expect(short.stderr.contains("--key-id: The key id 'KKTEST001' is not 10 upper-case letters and digits"))
        #expect(short.stdout.isEmpty)
        let lower = try await CLI.run([
            "jwt", "sign", "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "kkteam0001",
        ])
        #expect(lower.status == 64)
        #expect(lower.stderr.contains("--team-id: The team id 'kkteam0001'"))
        let empty = try await CLI.run(["jwt", "sign", "--key", Self.key, "--key-id", "", "--team-id", "KKTEAM0001"])
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("Give the key id with --key-id or APNS_KEY_ID."))
    }

    // MARK: 3. A wrong .p12 password names the command's own flags

    @Test("A wrong .p12 password: the fix names --cert-password for send, --password for cert inspect")
    func passwordFix() async throws {
        let send = try await CLI.run(
            [
                "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--cert", Self.p12,
                "--cert-password", "wrong", "--title", "x", "--url", "https://127.0.0.1:1", "--ca-file", Self.ca,
            ])
        #expect(send.status == 2, "\(send.stderr)")
        #expect(
            send.stderr.contains(
                "Fix: Give the password it was exported with (--cert-password, --cert-password-file or $APNS_CERT_PASSWORD)."
            ))
        #expect(!send.stderr.contains("(--password"))

        let none = try await CLI.run(
            [
                "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--cert", Self.p12,
                "--title", "x", "--url", "https://127.0.0.1:1", "--ca-file", Self.ca, "--json",
            ])
        #expect(none.status == 2)
        let noneError = try Self.errorObject(none)
        #expect(noneError["code"] as? String == "p12-password")
        #expect((noneError["fix"] as? String)?.contains("--cert-password") == true)

        let inspect = try await CLI.run(["cert", "inspect", Self.p12, "--password", "wrong"])
        #expect(inspect.status == 2)
        #expect(inspect.stderr.contains("(--password, --password-file or $APNS_CERT_PASSWORD)"))
        #expect(!inspect.stderr.contains("--cert-password"))
    }

    // MARK: 4. Files: missing, a folder, empty, too large, the wrong format

    @Test("jwt sign/verify/bench --key: a folder, a missing, an empty, a huge file each get their own message (2)")
    func keyFiles() async throws {
        let empty = try Self.file("", name: "empty.p8")
        let huge = try Self.file(String(repeating: "A", count: 70_000), name: "huge.p8")
        let folder = CLI.certificates.path
        let cases: [(String, String)] = [
            (folder, "is a folder, not a file"), ("/nonexistent/AuthKey.p8", "does not exist"),
            (empty, "is empty"), (huge, "is larger than 65536 bytes"),
        ]
        let token = try await Self.sign(Self.credentials)
        for (path, words) in cases {
            let sign = try await CLI.run([
                "jwt", "sign", "--key", path, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            ])
            #expect(sign.status == 2, "\(path): \(sign.stderr)")
            #expect(sign.stderr.contains(words), "\(sign.stderr)")
            #expect(!sign.stderr.contains("permissions"), "\(sign.stderr)")
            let verify = try await CLI.run(["jwt", "verify", token, "--key", path, "--json"])
            #expect(verify.status == 2)
            #expect((try Self.errorObject(verify)["message"] as? String)?.contains(words) == true, "\(verify.stdout)")
            let bench = try await CLI.run(["jwt", "bench", "--key", path, "--seconds", "0.1"])
            #expect(bench.status == 2)
            #expect(bench.stderr.contains(words))
        }
        let folderSign = try await CLI.run([
            "jwt", "sign", "--key", folder, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        #expect(folderSign.stderr.contains("--key \(folder) is a folder"))
        let fromEnv = try await CLI.run(
            ["jwt", "sign"],
            environment: ["APNS_KEY_PATH": folder, "APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001"])
        #expect(fromEnv.status == 2)
        #expect(fromEnv.stderr.contains("APNS_KEY_PATH \(folder) is a folder"))
    }

    @Test("A key file of the wrong format: a certificate, two keys, binary junk, RSA: 2 with what was found")
    func keyFormats() async throws {
        let p8 = try String(contentsOfFile: Self.key, encoding: .utf8)
        let p8b = try String(contentsOfFile: Self.key2, encoding: .utf8)
        let two = try Self.file(p8 + p8b, name: "two.p8")
        var junkBytes: [UInt8] = []
        for i in 0..<512 { junkBytes.append(UInt8((i * 151 + 7) % 256)) }
        let junk = try Self.file(junkBytes, name: "junk.p8")
        let rsa = CLI.certificates.appendingPathComponent("bad/rsa.p8").path
        for (path, code) in [
            (Self.ca, "key-is-certificate"), (two, "key-multiple"), (junk, "key-unreadable"), (rsa, "key-not-ec"),
        ] {
            let token = try await Self.sign(Self.credentials)
            let r = try await CLI.run(["jwt", "verify", token, "--key", path, "--json"])
            #expect(r.status == 2, "\(path): \(r.stdout)")
            #expect(try Self.errorObject(r)["code"] as? String == code)
            let s = try await CLI.run([
                "jwt", "sign", "--key", path, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            ])
            #expect(s.status == 2, "\(path): \(s.stderr)")
            #expect(s.stdout.isEmpty)
        }
    }

    @Test("cert inspect: a folder, a missing, an empty file, junk, a .p8 instead of a certificate (2)")
    func certFiles() async throws {
        let empty = try Self.file("", name: "empty.p12")
        let junk = try Self.file(Array(repeating: 0xFF, count: 300), name: "junk.cer")
        let cases: [(String, String)] = [
            (CLI.certificates.path, "is a folder, not a file"), ("/nonexistent/push.p12", "does not exist"),
            (empty, "is empty"), (junk, "is neither a PEM nor a DER certificate"), (Self.key, "holds no certificate"),
        ]
        for (path, words) in cases {
            let r = try await CLI.run(["cert", "inspect", path])
            #expect(r.status == 2, "\(path): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(r.stderr)")
            let j = try await CLI.run(["cert", "inspect", path, "--json"])
            #expect(j.status == 2)
            #expect((try Self.errorObject(j)["message"] as? String)?.contains(words) == true)
        }
        let keyFolder = try await CLI.run(
            [
                "cert", "inspect", CLI.certificates.appendingPathComponent("client-development.crt").path, "--key",
                CLI.certificates.path,
            ])
        #expect(keyFolder.status == 2)
        #expect(keyFolder.stderr.contains("--key \(CLI.certificates.path) is a folder"))
    }

    @Test("payload lint: a folder, a missing, an empty file, empty stdin, a huge file: 2 with their own message")
    func payloadFiles() async throws {
        let empty = try Self.file("", name: "empty.json")
        let huge = try Self.file(String(repeating: " ", count: 1_100_000), name: "huge.json")
        for (path, words) in [
            (CLI.certificates.path, "is a folder, not a file"), ("/nonexistent/p.json", "does not exist"),
            (empty, "is empty"), (huge, "is larger than"),
        ] {
            let r = try await CLI.run(["payload", "lint", path])
            #expect(r.status == 2, "\(path): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(r.stderr)")
            let j = try await CLI.run(["payload", "lint", path, "--json"])
            #expect(j.status == 2)
            #expect((try Self.errorObject(j)["message"] as? String)?.contains(words) == true)
        }
        let stdin = try await CLI.run(["payload", "lint", "-"], stdin: "")
        #expect(stdin.status == 2)
        #expect(stdin.stderr.contains("Standard input is empty"))
        let junk = try await CLI.run(["payload", "lint", Self.ca, "--json"])
        #expect(junk.status == 1)
        #expect(try junk.json()["valid"] as? Bool == false)
    }

    // MARK: 5. Usage errors from run() show the subcommand's usage

    @Test(
        "A usage error found while running shows that subcommand's usage, not the root's",
        arguments: [
            (["jwt", "verify", "a.b.c"], "", "kkpush jwt verify"),
            (["jwt", "decode", "-"], "", "kkpush jwt decode"),
            (["jwt", "sign", "--key", key, "--team-id", "KKTEAM0001"], "", "kkpush jwt sign"),
            (["jwt", "sign", "--key", key, "--key-id", "KKTEST0001"], "", "kkpush jwt sign"),
            (["backend", "serve", "--secret", "", "--port", "0"], "", "kkpush backend serve"),
            (["send", "--token", "ab", "--topic", "x", "--key", key, "--title", "x"], "", "kkpush send"),
            (["mock", "serve", "--cert", ca], "", "kkpush mock serve"),
            (["diagnose", "--cert-password", "a", "--cert-password-file", "b"], "", "kkpush diagnose"),
        ])
    func subcommandUsage(args: [String], stdin: String, invocation: String) async throws {
        let r = try await CLI.run(args, stdin: stdin)
        #expect(r.status == 64, "\(args): \(r.stderr)")
        #expect(r.stderr.contains("Usage: \(invocation)"), "\(r.stderr)")
        #expect(r.stderr.contains("See '\(invocation) --help'"), "\(r.stderr)")
        #expect(!r.stderr.contains("kkpush <subcommand>"))
    }

    @Test("The same usage errors under --json: one JSON error object on stdout, 64")
    func usageJSON() async throws {
        let verify = try await CLI.run(["jwt", "verify", "a.b.c", "--json"])
        #expect(verify.status == 64)
        #expect(try Self.errorObject(verify)["code"] as? String == "usage")
        #expect(try Self.errorObject(verify)["fix"] as? String == "Run kkpush jwt verify --help for its flags.")
        let parsed = try await CLI.run(["jwt", "verify", "a.b.c", "--max-age=-5", "--json"])
        #expect(parsed.status == 64)
        #expect(try Self.errorObject(parsed)["fix"] as? String == "Run kkpush jwt verify --help for its flags.")
        let db = try Self.folder().appendingPathComponent("backend.db").path
        let enroll = try await CLI.run(
            [
                "backend", "enroll", "--secret", "", "--db", db, "--tenant", "vv", "--teams", "a",
                "--hardware-identifier", "123e4567-e89b-12d3-a456-426614174000", "--json",
            ])
        #expect(enroll.status == 64, "\(enroll.stdout) \(enroll.stderr)")
        #expect(try Self.errorObject(enroll)["fix"] as? String == "Run kkpush backend enroll --help for its flags.")
        let decode = try await CLI.run(["jwt", "decode", "-", "--json"], stdin: "  \n")
        #expect(decode.status == 64)
        #expect((try Self.errorObject(decode)["message"] as? String)?.contains("standard input is empty") == true)
    }

    // MARK: 6. One final newline is not part of a payload file

    @Test("payload build > file, payload lint file: no white-space note; send --payload file sends no newline")
    func finalNewline() async throws {
        let built = try await CLI.run(["payload", "build", "--title", "Dienst", "--body", "Gewijzigd"])
        #expect(built.status == 0)
        #expect(built.stdout.hasSuffix("}\n"))
        let path = try Self.file(built.stdout, name: "dienst.json")
        let lint = try await CLI.run(["payload", "lint", path, "--json"])
        #expect(lint.status == 0)
        let problems = try #require(try lint.json()["problems"] as? [[String: Any]])
        #expect(!problems.contains { $0["code"] as? String == "payload-whitespace" }, "\(lint.stdout)")
        #expect(try lint.json()["size"] as? Int == built.stdout.utf8.count - 1)

        let crlf = try await CLI.run(["payload", "lint", "-", "--json"], stdin: #"{"aps":{"alert":"x"}}"# + "\r\n")
        #expect(try crlf.json()["size"] as? Int == 21)
        let twice = try await CLI.run(["payload", "lint", "-", "--json"], stdin: #"{"aps":{"alert":"x"}}"# + "\n\n")
        let twiceProblems = try #require(try twice.json()["problems"] as? [[String: Any]])
        #expect(twiceProblems.contains { $0["code"] as? String == "payload-whitespace" })
        let leading = try await CLI.run(["payload", "lint", "-", "--json"], stdin: " " + #"{"aps":{"alert":"x"}}"#)
        #expect(
            (try leading.json()["problems"] as? [[String: Any]])?.contains {
                $0["code"] as? String == "payload-whitespace"
            } == true)

        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let sent = try await CLI.run(
                [
                    "send", "--token", device.token, "--topic", Self.topic, "--url", server.sandboxEndpoint.baseURL,
                    "--ca-file", try #require(server.caFile), "--env", "sandbox", "--payload", path,
                ] + Self.credentials)
            #expect(sent.status == 0, "\(sent.stdout) \(sent.stderr)")
            let delivered = try #require(server.deliveries(token: device.token, limit: 1).first)
            #expect(delivered.payload == built.stdout.trimmingCharacters(in: .newlines))
            #expect(!delivered.payload.hasSuffix("\n"))
        }
    }

    // MARK: 7. The sweep

    @Test(
        "payload build: empty values and malformed Kantine Koning ids are usage errors naming the flag",
        arguments: [
            (["--title", "x", "--sound", ""], "--sound is empty"),
            (["--title", "x", "--category", ""], "--category is empty"),
            (["--title", "x", "--thread-id", " "], "--thread-id is empty"),
            (["--title", ""], "--title is empty"),
            (["--dienst-update", "--tenant", "VV Oranje", "--dienst-id", "1"], "The tenant slug 'VV Oranje'"),
            (["--dienst-update", "--tenant", "vv", "--dienst-id", "4 2"], "The dienst id '4 2'"),
            (["--cta-token", "a b"], "The CTA token 'a b'"),
            (["--body", "x", "--interruption-level", "loud"], "--interruption-level must be"),
            (["--body", "x", "--custom", "aps={}"], "--custom cannot set 'aps'"),
        ])
    func buildFlags(args: [String], words: String) async throws {
        let r = try await CLI.run(["payload", "build"] + args)
        #expect(r.status == 64, "\(args): \(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(r.stderr.contains("Usage: kkpush payload build"))
        #expect(r.stdout.isEmpty)
    }

    @Test("payload lint: an empty --topic or --push-type is a usage error; an unknown one is APNs's verdict")
    func lintFlags() async throws {
        let path = try Self.file(#"{"aps":{"alert":"x"}}"#, name: "p.json")
        let topic = try await CLI.run(["payload", "lint", path, "--topic", ""])
        #expect(topic.status == 64)
        #expect(topic.stderr.contains("--topic is empty"))
        let pushType = try await CLI.run(["payload", "lint", path, "--push-type", "", "--json"])
        #expect(pushType.status == 64)
        #expect((try Self.errorObject(pushType)["message"] as? String)?.contains("--push-type is empty") == true)
        let unknown = try await CLI.run(["payload", "lint", path, "--push-type", "bogus", "--json"])
        #expect(unknown.status == 1)
        #expect((try unknown.json()["rejection"] as? [String: Any])?["reason"] as? String == "InvalidPushType")
        let priority = try await CLI.run(["payload", "lint", path, "--priority", "7"])
        #expect(priority.status == 1)
        #expect(priority.stdout.contains("BadPriority"))
    }

    @Test("jwt decode: an empty token argument and junk: usage (64) and a malformed verdict (1) in text and JSON")
    func decodeInputs() async throws {
        let empty = try await CLI.run(["jwt", "decode", ""])
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("TOKEN is empty"))
        let junk = try await CLI.run(["jwt", "decode", "not-a-token"])
        #expect(junk.status == 1)
        #expect(junk.stderr.contains("malformed"))
        let junkJSON = try await CLI.run(["jwt", "decode", "not-a-token", "--json"])
        #expect(junkJSON.status == 1)
        #expect((try junkJSON.json()["warnings"] as? [[String: Any]])?.first?["code"] as? String == "malformed")
        let fromStdin = try await CLI.run(
            ["jwt", "decode", "-", "--json"], stdin: try await Self.sign(Self.credentials) + "\n")
        #expect(fromStdin.status == 0)
        #expect((try fromStdin.json()["claims"] as? [String: Any])?["iss"] as? String == "KKTEAM0001")
    }

    @Test("cert inspect --key with a .p12 is a usage error saying why; --custom twice is a usage error")
    func certKeyWithP12AndCustomTwice() async throws {
        let key = CLI.certificates.appendingPathComponent("client-development.key").path
        let r = try await CLI.run(["cert", "inspect", Self.p12, "--password", "kkpush", "--key", key, "--json"])
        #expect(r.status == 64, "\(r.stdout)")
        #expect(try Self.errorObject(r)["code"] as? String == "cert-key-with-p12")
        let custom = try await CLI.run(["payload", "build", "--body", "x", "--custom", "a=1", "--custom", "a=2"])
        #expect(custom.status == 64)
        #expect(custom.stderr.contains("--custom a would replace"))
        #expect(custom.stdout.isEmpty)
    }

    @Test("Two inputs from standard input are a usage error naming both")
    func twoStdins() async throws {
        let verify = try await CLI.run(["jwt", "verify", "-", "--key", "-"], stdin: "x")
        #expect(verify.status == 64)
        #expect(verify.stderr.contains("TOKEN or --key, not both"))
        let inspect = try await CLI.run(["cert", "inspect", "-", "--password-file", "-"], stdin: "x")
        #expect(inspect.status == 64)
        #expect(inspect.stderr.contains("FILE, --password-file or --key"))
        let certFromStdin = try await CLI.run(
            ["cert", "inspect", "-", "--json"],
            stdin: try String(
                contentsOfFile: CLI.certificates.appendingPathComponent("client-development.crt").path, encoding: .utf8)
        )
        #expect(certFromStdin.status == 0, "\(certFromStdin.stderr)")
        #expect(try certFromStdin.json()["bundle_id"] as? String == "nl.kantinekoning.app")
    }

    @Test("jwt bench --compare-openssl without openssl: a JSON error under --json, exit 1")
    func benchWithoutOpenSSL() async throws {
        let r = try await CLI.run(
            ["jwt", "bench", "--seconds", "0.1", "--compare-openssl", "--json"], environment: ["PATH": "/nonexistent"])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        #expect(try Self.errorObject(r)["code"] as? String == "openssl-speed-failed")
    }

    @Test(
        "jwt decode: a token from the future reads 'in the future'; JSON warnings carry severity and fix as the text does"
    )
    func decodeFuture() async throws {
        let token = try await Self.sign(Self.credentials + ["--issued-at", "1700000500"])
        let text = try await CLI.run(["jwt", "decode", token, "--now", "1700000000"])
        #expect(text.stdout.contains("(500 s in the future)"))
        #expect(text.stdout.contains("error iat-in-future"))
        let json = try await CLI.run(["jwt", "decode", token, "--now", "1700000000", "--json"])
        let warning = try #require((try json.json()["warnings"] as? [[String: Any]])?.first)
        #expect(warning["severity"] as? String == "error")
        #expect(warning["code"] as? String == "iat-in-future")
        #expect((warning["fix"] as? String)?.isEmpty == false)
    }

    @Test("README examples for jwt, cert and payload, run as written (with the test key's names)")
    func readmeExamples() async throws {
        // kkpush jwt sign --key AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ
        let jwt = try await Self.sign(Self.credentials)
        // kkpush jwt decode "$JWT" --json
        let decoded = try await CLI.run(["jwt", "decode", jwt, "--json"])
        #expect(decoded.status == 0)
        #expect(try decoded.json()["header"] is [String: Any])
        // kkpush jwt verify "$JWT" --key AuthKey_ABC123DEFG.p8
        let verified = try await CLI.run(["jwt", "verify", jwt, "--key", Self.key])
        #expect(verified.status == 0)
        // kkpush cert inspect push.p12 --password-file p12.pass --json
        let pass = try Self.file("kkpush\n", name: "p12.pass")
        let inspected = try await CLI.run(["cert", "inspect", Self.p12, "--password-file", pass, "--json"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect((try inspected.json()["topics"] as? [String])?.isEmpty == false)
        // kkpush payload build --dienst-update ... > dienst.json; kkpush payload lint dienst.json --push-type background --topic ... --json
        let built = try await CLI.run([
            "payload", "build", "--dienst-update", "--tenant", "vvwilhelmus", "--dienst-id", "42",
        ])
        #expect(built.status == 0)
        let dienst = try Self.file(built.stdout, name: "dienst.json")
        let lint = try await CLI.run([
            "payload", "lint", dienst, "--push-type", "background", "--topic", Self.topic, "--json",
        ])
        #expect(lint.status == 0)
        #expect(try lint.json()["valid"] as? Bool == true)
        // kkpush payload lint Push.apns
        let apns = try String(
            contentsOf: CLI.root.appendingPathComponent("Tests/KKPushCoreTests/.fixtures/dienst-update.apns"),
            encoding: .utf8)
        let push = try Self.file(apns, name: "Push.apns")
        let simulator = try await CLI.run(["payload", "lint", push])
        #expect(simulator.status == 0, "\(simulator.stdout)")
        #expect(simulator.stdout.contains("topic com.kantinekoning.app"))
        // .build/release/kkpush jwt bench --seconds 3 --compare-openssl (shorter here)
        let bench = try await CLI.run(["jwt", "bench", "--seconds", "0.2", "--json"])
        #expect(bench.status == 0)
        #expect(try bench.json()["signs"] as? Int ?? 0 > 0)
        // kkpush version (--json)
        let version = try await CLI.run(["version", "--json"])
        #expect(version.status == 0)
        #expect(try version.json()["kkpush"] is String)
    }
}
