import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import KKPushTrust
import KantineKoning
import Testing

/// Server trust: `kkpush tls check` and its engine (`ServerTrustCheck`) against the mock over real TLS on 127.0.0.1,
/// serving the test CA's chain and a stand-in of Apple's USERTrust chain made by `kkpush mock certs --chain
/// usertrust`; trust stores with and without the root, pin sets, a server that omits its intermediate; and
/// `diagnose --probe`'s finding when the handshake fails on the chain.
@Suite("Server trust (tls check, stand-in chains, diagnose)")
struct ServerTrustTests {
    /// The stand-in chain's files, made once per test run by the command itself.
    struct StandIn: Sendable {
        var folder: String
        var chain: String { folder + "/server.crt" }
        var key: String { folder + "/server.key" }
        var leaf: String { folder + "/leaf.crt" }
        var intermediate: String { folder + "/intermediate.crt" }
        var root: String { folder + "/root.crt" }
    }

    /// The stand-in chain's folder, once made (removed at exit).
    nonisolated(unsafe) static var madeFolder: String?

    static let testCA = CLI.certificates.appendingPathComponent("ca.crt").path

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

    struct StandInFailure: Error, CustomStringConvertible {
        var detail: String
        var description: String { "the stand-in chain was not made: \(detail)" }
    }

    /// `kkpush mock certs --chain usertrust` into a temporary folder, once per run.
    static func standIn() async throws -> StandIn { try await making.value }

    /// The mock serving `chain` with `key` (nil: its own test certificate), its sandbox port given to `body`.
    static func withMock<R: Sendable>(
        chain: String? = nil, key: String? = nil, _ body: @Sendable (Int) async throws -> R
    ) async throws -> R {
        var configuration = MockServerConfiguration.forTests()
        configuration.certificateFile = chain
        configuration.privateKeyFile = key
        return try await withMockServer(configuration: configuration) { server in
            try await body(server.sandboxEndpoint.port)
        }
    }

    static func check(_ port: Int, _ anchors: ServerTrustCheck.Anchors, bundle: String? = nil) async throws
        -> ServerTrustReport
    {
        try await ServerTrustCheck.runOffThread(
            host: "127.0.0.1", port: port, anchors: anchors, timeout: 30, systemBundle: bundle)
    }

    @Test("The stand-in chain has the real root's name and shape, with keys made here")
    func standInShape() async throws {
        let files = try await Self.standIn()
        let chain = try String(contentsOfFile: files.chain, encoding: .utf8)
        #expect(chain.components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 3, "leaf then intermediate")
        let subject = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"), ["x509", "-in", files.root, "-noout", "-subject", "-text"],
            timeout: 30)
        let text = String(decoding: subject.stdout, as: UTF8.self)
        #expect(
            text.contains(
                "subject=C = US, ST = New Jersey, L = Jersey City, O = The USERTRUST Network, CN = USERTrust RSA Certification Authority"
            ), "\(text)")
        #expect(text.contains("Public-Key: (4096 bit)"))
        #expect(text.contains("CA:TRUE"))
        let verify = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            ["verify", "-CAfile", files.root, "-untrusted", files.intermediate, "-purpose", "sslserver", files.leaf],
            timeout: 30)
        #expect(verify.status == 0, "\(String(decoding: verify.stdout + verify.stderr, as: UTF8.self))")
    }

    @Test("The mock's own test CA chain is trusted by the test CA, and its root comes from the CA file")
    func testCAChain() async throws {
        let report = try await Self.withMock { port in try await Self.check(port, .caFile(Self.testCA)) }
        #expect(report.verdict == .trusted, "\(report)")
        #expect(report.served.count == 1)
        #expect(report.served[0].commonName == "localhost")
        #expect(report.root?.commonName == "kkpush test CA")
        #expect(report.rootSource == .trustStore)
        #expect(report.alpn == "h2")
        #expect(report.serverName == nil, "an address is checked as an address, not sent as SNI")
    }

    @Test("The USERTrust stand-in: trusted with its root in the CA file, not with the test CA alone")
    func standInTrustedAndNot() async throws {
        let files = try await Self.standIn()
        let (trusted, refused) = try await Self.withMock(chain: files.chain, key: files.key) { port in
            (try await Self.check(port, .caFile(files.root)), try await Self.check(port, .caFile(Self.testCA)))
        }
        #expect(trusted.verdict == .trusted, "\(trusted)")
        #expect(trusted.served.map(\.commonName) == ["localhost", "Apple Public Server RSA CA 12 - G1"])
        #expect(trusted.root?.commonName == "USERTrust RSA Certification Authority")
        #expect(trusted.root?.keyBits == 4096 && trusted.root?.keyType == "RSA")
        #expect(trusted.rootSource == .trustStore)

        #expect(refused.verdict == .notTrusted)
        #expect(refused.missingIssuerCommonName == "USERTrust RSA Certification Authority")
        #expect(refused.missingIsRoot)
        #expect(refused.root == nil)
        #expect(refused.fix?.contains("USERTrust_RSA_Certification_Authority.crt") == true, "\(refused.fix ?? "")")
    }

    @Test("A trust store with a namesake of the root (same name, another key) does not trust the chain, and says so")
    func namesakeRoot() async throws {
        let files = try await Self.standIn()
        let other = try StandInChain.make(hostNames: ["localhost"], addresses: [], rootKeyBits: 2048)
        try await withTemporaryDirectory { dir in
            let namesake = dir + "/namesake.crt"
            try other.rootPEM.write(toFile: namesake, atomically: true, encoding: .utf8)
            let report = try await Self.withMock(chain: files.chain, key: files.key) { port in
                try await Self.check(port, .caFile(namesake))
            }
            #expect(report.verdict == .notTrusted)
            #expect(report.storeHasNamesake)
            #expect(report.missingIssuerCommonName == "USERTrust RSA Certification Authority")
            #expect(report.problem?.contains("with another key") == true, "\(report.problem ?? "")")
            #expect(report.fix?.contains("TLS-inspecting proxy") == true)
        }
    }

    @Test("A CA file holding the root among others (a bundle) trusts the chain")
    func bundleWithRoot() async throws {
        let files = try await Self.standIn()
        try await withTemporaryDirectory { dir in
            let bundle = dir + "/bundle.crt"
            let text =
                try String(contentsOfFile: Self.testCA, encoding: .utf8)
                + String(contentsOfFile: files.root, encoding: .utf8)
            try text.write(toFile: bundle, atomically: true, encoding: .utf8)
            let report = try await Self.withMock(chain: files.chain, key: files.key) { port in
                try await Self.check(port, .caFile(bundle))
            }
            #expect(report.verdict == .trusted)
            #expect(report.anchors == .caFile(path: bundle))
        }
    }

    @Test("A CA folder in subject-hash layout (openssl rehash) with the root trusts the chain; without it, not")
    func caFolder() async throws {
        let files = try await Self.standIn()
        try await withTemporaryDirectory { dir in
            let with = dir + "/with"
            let without = dir + "/without"
            for (folder, source) in [(with, files.root), (without, Self.testCA)] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                try FileManager.default.copyItem(atPath: source, toPath: folder + "/root.pem")
                let rehash = try await runProcess(
                    URL(fileURLWithPath: "/usr/bin/openssl"), ["rehash", folder], timeout: 30)
                #expect(rehash.status == 0, "\(String(decoding: rehash.stderr, as: UTF8.self))")
            }
            let (trusted, refused) = try await Self.withMock(chain: files.chain, key: files.key) { port in
                (try await Self.check(port, .caFolder(with)), try await Self.check(port, .caFolder(without)))
            }
            #expect(trusted.verdict == .trusted, "\(trusted)")
            #expect(trusted.anchors == .caFolder(path: with))
            #expect(refused.verdict == .notTrusted)
            #expect(refused.missingIssuerCommonName == "USERTrust RSA Certification Authority")
        }
    }

    @Test("A pin set: the root's key (completed from a bundle) or the intermediate's fingerprint match; others do not")
    func pins() async throws {
        let files = try await Self.standIn()
        let probe = try await Self.withMock(chain: files.chain, key: files.key) { port in
            try await Self.check(port, .caFile(files.root))
        }
        let root = try #require(probe.root)
        let intermediate = probe.served[1]
        let otherPin = try ServerTrustCheck.Pin("sha256/" + Data(repeating: 7, count: 32).base64EncodedString())
        let (byRoot, byIntermediate, byNone) = try await Self.withMock(chain: files.chain, key: files.key) { port in
            (
                try await Self.check(port, .pins([try .init("sha256/" + root.spkiSHA256)]), bundle: files.root),
                try await Self.check(port, .pins([try .init(intermediate.sha256)]), bundle: Self.testCA),
                try await Self.check(port, .pins([otherPin]), bundle: files.root)
            )
        }
        #expect(byRoot.verdict == .trusted, "\(byRoot)")
        #expect(byRoot.matchedPin?.contains("USERTrust RSA Certification Authority") == true)
        #expect(byIntermediate.verdict == .trusted, "\(byIntermediate)")
        #expect(byIntermediate.matchedPin?.contains("Apple Public Server RSA CA 12 - G1") == true)
        #expect(byNone.verdict == .notTrusted)
        #expect(byNone.problem == "no certificate of the chain matches a pin")
        #expect(byNone.fix?.contains("sha256/" + root.spkiSHA256) == true, "the fix offers the root's pin")
        #expect(throws: KKPushError.self) { try ServerTrustCheck.Pin("sha256/not-a-hash") }
    }

    @Test("A server that omits its intermediate: the intermediate is named as missing, not the root")
    func omittedIntermediate() async throws {
        let files = try await Self.standIn()
        let report = try await Self.withMock(chain: files.leaf, key: files.key) { port in
            try await Self.check(port, .caFile(files.root))
        }
        #expect(report.served.count == 1)
        #expect(report.verdict == .notTrusted)
        #expect(!report.missingIsRoot)
        #expect(report.missingIssuerCommonName == "Apple Public Server RSA CA 12 - G1")
        #expect(report.problem?.contains("sent only its own certificate") == true, "\(report.problem ?? "")")
    }

    @Test("Two chains at once: sandbox under the test CA, production under the USERTrust stand-in")
    func perEnvironmentChains() async throws {
        let files = try await Self.standIn()
        var configuration = MockServerConfiguration.forTests()
        configuration.productionCertificateFile = files.chain
        configuration.productionPrivateKeyFile = files.key
        let (sandbox, production, channels) = try await withMockServer(configuration: configuration) { server in
            (
                try await Self.check(server.sandboxEndpoint.port, .caFile(Self.testCA)),
                try await Self.check(server.productionEndpoint.port, .caFile(files.root)),
                try await Self.check(server.productionChannelEndpoint.port, .caFile(files.root))
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

    @Test("No server on the port: a connection error, not a verdict")
    func nothingListening() async throws {
        let refusing = try RefusingLoopbackPort()
        await #expect {
            _ = try await Self.check(refusing.port, .caFile(Self.testCA))
        } throws: { error in
            (error as? KKPushError)?.code == .trustConnect
        }
        withExtendedLifetime(refusing) {}
    }

    @Test("tls check: text and --json, trusted (0), not trusted (1), no connection (69)")
    func command() async throws {
        let files = try await Self.standIn()
        let (text, json, refused, refusedText) = try await Self.withMock(chain: files.chain, key: files.key) { port in
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
        let both = try await CLI.run(["tls", "check", "--ca-file", "a", "--pin", "b"])
        #expect(both.status == 64)
    }

    @Test("diagnose --probe: a TLS failure on the chain names the missing root and the fix")
    func diagnoseFinding() async throws {
        let files = try await Self.standIn()
        let r = try await Self.withMock(chain: files.chain, key: files.key) { port in
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

    @Test("The server-trust finding: only for an untrusted chain the check could judge")
    func findingRule() {
        let untrusted = DiagnosisFacts.ServerTrust(
            trustStore: "the CA file x", trusted: false, problem: "p", missingCertificate: "Some Root",
            missingIsRoot: true, fix: "Add it.")
        let findings = Diagnoser.serverTrustFindings(untrusted, where: "sandbox (h:1)")
        #expect(findings.map(\.code) == [DiagnosisCode.serverTrust])
        #expect(findings.first?.message.contains("the root \"Some Root\" is not in the CA file x") == true)
        #expect(findings.first?.fix == "Add it.")
        var trusted = untrusted
        trusted.trusted = true
        #expect(Diagnoser.serverTrustFindings(trusted, where: "s").isEmpty)
        var failed = untrusted
        failed.checkFailed = "No connection"
        #expect(Diagnoser.serverTrustFindings(failed, where: "s").isEmpty)
    }
}
