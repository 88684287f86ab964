import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import KKPushTrust
import Testing

/// Server trust through the commands: `kkpush tls check` against the mock over real TLS on 127.0.0.1, serving the
/// test CA's chain and a stand-in of Apple's USERTrust chain made by `kkpush mock certs --chain usertrust`; `mock
/// serve` with two chains; and `diagnose --probe`'s finding when the handshake fails on the chain. The check alone
/// (`ServerTrustCheck`: trust stores with and without the root, pin sets, a server that omits its intermediate, private
/// chains, a port with nothing listening) is tested in KKPushTrustTests (ServerTrustCheckTests,
/// StandInChainTrustTests); the finding's rule in KantineKoningTests (DiagnoserServerTrustTests).
@Suite("Server trust (tls check, stand-in chains, diagnose)")
struct ServerTrustTests {
    /// The stand-in chain's files, made once per test run by the command itself.
    typealias StandIn = ServerTrustFixtures.StandIn

    /// The stand-in chain's folder, once made (removed at exit).
    nonisolated(unsafe) static var madeFolder: String?

    typealias F = ServerTrustFixtures
    typealias StandInFailure = ServerTrustFixtures.StandInFailure

    static let testCA = F.testCA

    /// The one making of the stand-in chain every test of the suite shares (an RSA 4096 key takes a while: made once,
    /// not by each test at once).
    static let making = Task { () async throws -> StandIn in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-trust-\(UUID().uuidString)")
            .path
        let r = try await CLI.run(["mock", "certs", "--chain", "usertrust", "--out", folder, "--json"], timeout: 300)
        let made = StandIn(folder: folder)
        // Removed when the test process exits (shared by every test of the run, so not before).
        madeFolder = folder
        atexit {
            if let folder = ServerTrustTests.madeFolder { try? FileManager.default.removeItem(atPath: folder) }
        }
        // Outside any one test, so failures are thrown (each test that needs the chain fails with it), not recorded.
        guard r.status == 0, try r.json()["root"] as? String == made.root else {
            throw StandInFailure(detail: "mock certs exited \(r.status): \(r.stdout) \(r.stderr)")
        }
        for path in [made.chain, made.key, made.leaf, made.intermediate, made.root]
        where !FileManager.default.fileExists(atPath: path) {
            throw StandInFailure(detail: "\(path) was not written")
        }
        return made
    }

    /// `kkpush mock certs --chain usertrust` into a temporary folder, once per run.
    static func standIn() async throws -> StandIn { try await making.value }

    @Test("Two chains at once: sandbox under the test CA, production under the USERTrust stand-in")
    func perEnvironmentChains() async throws {
        let files = try await Self.standIn()
        var configuration = MockServerConfiguration.forTests()
        configuration.productionCertificateFile = files.chain
        configuration.productionPrivateKeyFile = files.key
        let (sandbox, production, channels) = try await withMockServer(configuration: configuration) { server in
            (
                try await F.check(server.sandboxEndpoint.port, .caFile(Self.testCA)),
                try await F.check(server.productionEndpoint.port, .caFile(files.root)),
                try await F.check(server.productionChannelEndpoint.port, .caFile(files.root))
            )
        }
        #expect(sandbox.verdict == .trusted && sandbox.root?.commonName == "kkpush test CA")
        #expect(
            production.verdict == .trusted && production.root?.commonName == "USERTrust RSA Certification Authority")
        #expect(channels.served.count == 2, "the production channel-management listener serves the same chain")
        let alone = try await CLI.run(["mock", "serve", "--production-cert", files.chain, "--admin-port", "0"])
        #expect(alone.status == 64, "\(alone.stderr)")
        #expect(alone.stderr.contains("Give --production-cert and --production-key together."))
    }

    @Test("tls check: text and --json, trusted (0), not trusted (1), no connection (69)")
    func command() async throws {
        let files = try await Self.standIn()
        let (text, json, refused, refusedText) = try await F.withMock(chain: files.chain, key: files.key) { port in
            let target = "127.0.0.1:\(port)"
            return (
                try await CLI.run(["tls", "check", target, "--ca-file", files.root]),
                try await CLI.run(["tls", "check", target, "--ca-file", files.root, "--json"]),
                try await CLI.run(["tls", "check", target, "--ca-file", Self.testCA, "--json"]),
                try await CLI.run(["tls", "check", target, "--ca-file", Self.testCA])
            )
        }
        #expect(text.status == 0, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("Chain served (2, leaf first):"))
        #expect(text.stdout.contains("Apple Public Server RSA CA 12 - G1"))
        #expect(text.stdout.contains("Root (from the trust store):"))
        #expect(text.stdout.contains("key:      RSA 4096"))
        #expect(text.stdout.contains("Verdict: trusted"))

        #expect(json.status == 0)
        let j = try json.json()
        #expect(j["trusted"] as? Bool == true)
        #expect((j["chain"] as? [Any])?.count == 2)
        #expect((j["root"] as? [String: Any])?["common_name"] as? String == "USERTrust RSA Certification Authority")
        #expect((j["trust_store"] as? [String: Any])?["kind"] as? String == "ca-file")

        #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
        let r = try refused.json()
        #expect(r["verdict"] as? String == "not-trusted")
        let missing = try #require(r["missing"] as? [String: Any])
        #expect(missing["kind"] as? String == "root")
        #expect(missing["common_name"] as? String == "USERTrust RSA Certification Authority")
        #expect(refusedText.status == 1)
        #expect(refusedText.stdout.contains("Missing: the root \"USERTrust RSA Certification Authority\""))
        #expect(refusedText.stdout.contains("Fix: Install the root"))

        // A port bound for the test and never listened on: refused, and no other test's server can take it.
        let refusing = try RefusingLoopbackPort()
        let port = refusing.port
        let closed = try await CLI.run([
            "tls", "check", "127.0.0.1:\(port)", "--ca-file", Self.testCA, "--timeout", "5",
        ])
        #expect(closed.status == 69, "\(closed.stdout) \(closed.stderr)")
        #expect(closed.stderr.contains("No connection to 127.0.0.1:\(port)"))
        withExtendedLifetime(refusing) {}

        let badPin = try await CLI.run(["tls", "check", "127.0.0.1:1", "--pin", "nope"])
        #expect(badPin.status == 2, "\(badPin.stdout) \(badPin.stderr)")
        #expect(badPin.stderr.contains("(--pin)"))
        let both = try await CLI.run(["tls", "check", "--ca-file", "a", "--ca-path", "b"])
        #expect(both.status == 64)
    }

    @Test("diagnose --probe: a TLS failure on the chain names the missing root and the fix")
    func diagnoseFinding() async throws {
        let files = try await Self.standIn()
        let r = try await F.withMock(chain: files.chain, key: files.key) { port in
            let url = "https://127.0.0.1:\(port)"
            return try await CLI.run([
                "diagnose", "--probe", "--json", "--token", String(repeating: "ab", count: 32), "--topic",
                "nl.kantinekoning.app", "--sandbox-url", url, "--production-url", url, "--ca-file", Self.testCA,
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--timeout", "30", "--build-environment", "production",
            ])
        }
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        let j = try r.json()
        let verdict = try #require(j["verdict"] as? [String: Any], "\(r.stdout)")
        #expect(verdict["code"] as? String == "server-trust", "\(r.stdout)")
        #expect((verdict["message"] as? String)?.contains("USERTrust RSA Certification Authority") == true)
        #expect((verdict["fix"] as? String)?.contains("USERTrust_RSA_Certification_Authority.crt") == true)
        let codes = try #require(j["findings"] as? [[String: Any]]).compactMap { $0["code"] as? String }
        #expect(codes.contains("connectivity"), "the TLS failure itself is still reported: \(codes)")
    }

    // MARK: Classifying what is missing (issue 59, item 14)

    @Test("The mock's own chain (a leaf its self-signed test CA signs) lacks a root, not an intermediate")
    func mockTestCAIsARoot() async throws {
        let files = try await Self.standIn()
        let (report, bySystem, command) = try await F.withMock { port in
            (
                try await F.check(port, .caFile(files.root)),
                try await F.check(port, .system, bundle: files.root),
                try await CLI.run(["tls", "check", "127.0.0.1:\(port)", "--ca-file", files.root])
            )
        }
        for r in [report, bySystem] {
            #expect(r.verdict == .notTrusted)
            #expect(r.missingKind == .root, "\(r)")
            #expect(r.missingIssuerCommonName == "kkpush test CA")
            #expect(r.problem?.contains("the root \"kkpush test CA\"") == true, "\(r.problem ?? "")")
            #expect(r.problem?.contains("intermediate") == false, "\(r.problem ?? "")")
            #expect(r.fix?.contains("Certificates/ca.crt") == true, "\(r.fix ?? "")")
        }
        #expect(command.status == 1, "\(command.stdout) \(command.stderr)")
        #expect(command.stdout.contains("Missing: the root \"kkpush test CA\""), "\(command.stdout)")
        #expect(command.stdout.contains("(--ca-file)"), "the fix names the flag: \(command.stdout)")
        #expect(!command.stdout.contains("(caFile)"), "no placeholder reaches the user: \(command.stdout)")
    }

    @Test("Pins: a pin of the stand-in's root matches with its root file; without it the fix names the real root")
    func pinOfTheStandInRoot() async throws {
        let files = try await Self.standIn()
        let rootReport = try await F.withMock(chain: files.chain, key: files.key) { port in
            try await F.check(port, .caFile(files.root))
        }
        let root = try #require(rootReport.root)
        let rootPin = "sha256/" + root.spkiSHA256
        let (alone, completed, command, commandAlone) = try await F.withMock(chain: files.chain, key: files.key) {
            port in
            (
                try await F.check(port, .pins([try .init(rootPin)]), bundle: Self.testCA),
                try await F.check(port, .pins([try .init(rootPin)], caFile: files.root)),
                try await CLI.run(["tls", "check", "127.0.0.1:\(port)", "--pin", rootPin, "--ca-file", files.root]),
                try await CLI.run(["tls", "check", "127.0.0.1:\(port)", "--pin", rootPin, "--json"])
            )
        }
        #expect(completed.verdict == .trusted, "\(completed)")
        #expect(completed.matchedPin?.contains("USERTrust RSA Certification Authority") == true)
        #expect(completed.anchors == .pins([rootPin], completedFrom: files.root))
        #expect(command.status == 0, "\(command.stdout) \(command.stderr)")
        #expect(command.stdout.contains("Pin matched: \(rootPin) (USERTrust RSA Certification Authority)"))

        #expect(alone.verdict == .notTrusted)
        let fix = try #require(alone.fix)
        #expect(!fix.contains("the chain's root \"Apple Public Server RSA CA 12 - G1\""), "\(fix)")
        #expect(fix.contains("The chain's root \"USERTrust RSA Certification Authority\" is neither sent"), "\(fix)")
        #expect(fix.contains("the intermediate \"Apple Public Server RSA CA 12 - G1\""), "\(fix)")
        #expect(commandAlone.status == 1, "\(commandAlone.stdout) \(commandAlone.stderr)")
        #expect((try commandAlone.json()["fix"] as? String)?.contains("(--ca-file)") == true, "\(commandAlone.stdout)")
    }

    @Test("--ca-path: a missing path, a file, an empty folder and one without hash links exit 2 with the fix")
    func caPathProblems() async throws {
        let files = try await Self.standIn()
        try await withTemporaryDirectory { dir in
            let empty = dir + "/empty"
            let unhashed = dir + "/unhashed"
            let partly = dir + "/partly"
            for folder in [empty, unhashed, partly] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            }
            try FileManager.default.copyItem(atPath: files.root, toPath: unhashed + "/usertrust.pem")
            // Hashed with the test CA only, then the stand-in's root added without its link.
            try FileManager.default.copyItem(atPath: Self.testCA, toPath: partly + "/test-ca.pem")
            try await F.openssl(["rehash", partly], in: dir)
            try FileManager.default.copyItem(atPath: files.root, toPath: partly + "/usertrust.pem")

            let (missing, file, none, noLinks, partial) = try await F.withMock(
                chain: files.chain, key: files.key
            ) { port in
                let target = "127.0.0.1:\(port)"
                return (
                    try await CLI.run(["tls", "check", target, "--ca-path", dir + "/nowhere"]),
                    try await CLI.run(["tls", "check", target, "--ca-path", files.root]),
                    try await CLI.run(["tls", "check", target, "--ca-path", empty]),
                    try await CLI.run(["tls", "check", target, "--ca-path", unhashed]),
                    try await CLI.run(["tls", "check", target, "--ca-path", partly, "--json"])
                )
            }
            #expect(missing.status == 2, "\(missing.stdout) \(missing.stderr)")
            #expect(missing.stderr.contains("does not exist (--ca-path)"), "\(missing.stderr)")
            #expect(file.status == 2, "\(file.stdout) \(file.stderr)")
            #expect(file.stderr.contains("is a file, not a folder"), "\(file.stderr)")
            #expect(none.status == 2, "\(none.stdout) \(none.stderr)")
            #expect(none.stderr.contains("holds no certificate"), "\(none.stderr)")
            #expect(noLinks.status == 2, "\(noLinks.stdout) \(noLinks.stderr)")
            #expect(noLinks.stderr.contains("none under its subject-hash name"), "\(noLinks.stderr)")
            #expect(noLinks.stderr.contains("openssl rehash \(unhashed)"), "\(noLinks.stderr)")
            #expect(!noLinks.stdout.contains("does not hold"))

            #expect(partial.status == 1, "\(partial.stdout) \(partial.stderr)")
            let j = try partial.json()
            #expect((j["problem"] as? String)?.contains("not under its subject-hash name") == true, "\(partial.stdout)")
            #expect((j["fix"] as? String)?.contains("openssl rehash \(partly)") == true, "\(partial.stdout)")
            #expect((j["missing"] as? [String: Any])?["unhashed_file"] as? String == "usertrust.pem")
        }
    }

}
