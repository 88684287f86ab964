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
        let both = try await CLI.run(["tls", "check", "--ca-file", "a", "--ca-path", "b"])
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

    // MARK: Classifying what is missing (issue 59, item 14)

    /// A private chain made with the openssl command line: a self-signed root and an intermediate with names the
    /// check does not know, a leaf for localhost and 127.0.0.1 the intermediate signs, and one the root signs
    /// directly (as the mock's test CA signs its own leaf). EC P-256, valid 30 days.
    struct PrivateChain {
        var folder: String
        var root: String { folder + "/root.crt" }
        var intermediate: String { folder + "/intermediate.crt" }
        var leaf: String { folder + "/leaf.crt" }
        var key: String { folder + "/leaf.key" }
        var direct: String { folder + "/direct.crt" }
        /// The leaf, then the intermediate (what a server should serve).
        var chain: String { folder + "/chain.crt" }
        /// The leaf, the intermediate and the root.
        var withRoot: String { folder + "/with-root.crt" }
        static let rootName = "kkpush private root"
        static let intermediateName = "kkpush private intermediate"
    }

    static func openssl(_ arguments: [String], in folder: String) async throws {
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"), arguments, currentDirectory: URL(fileURLWithPath: folder),
            timeout: 60)
        guard r.status == 0 else {
            throw StandInFailure(
                detail: "openssl \(arguments.joined(separator: " ")): \(String(decoding: r.stderr, as: UTF8.self))")
        }
    }

    static func privateChain(in folder: String) async throws -> PrivateChain {
        let c = PrivateChain(folder: folder)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "root.key", "-out", "root.crt", "-subj", "/CN=\(PrivateChain.rootName)", "-days", "30",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: folder)
        try await openssl(
            ["req"] + ec + [
                "-keyout", "intermediate.key", "-out", "intermediate.csr", "-subj",
                "/CN=\(PrivateChain.intermediateName)",
            ], in: folder)
        try await openssl(
            ["req"] + ec + ["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"], in: folder)
        try "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n".write(
            toFile: folder + "/intermediate.ext", atomically: true, encoding: .utf8)
        try
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n"
            .write(toFile: folder + "/leaf.ext", atomically: true, encoding: .utf8)
        for (csr, ca, caKey, ext, out, serial) in [
            ("intermediate.csr", "root.crt", "root.key", "intermediate.ext", "intermediate.crt", "101"),
            ("leaf.csr", "intermediate.crt", "intermediate.key", "leaf.ext", "leaf.crt", "102"),
            ("leaf.csr", "root.crt", "root.key", "leaf.ext", "direct.crt", "103"),
        ] {
            try await openssl(
                [
                    "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-set_serial", serial, "-days", "30",
                    "-extfile", ext, "-out", out,
                ], in: folder)
        }
        let leaf = try String(contentsOfFile: c.leaf, encoding: .utf8)
        let intermediate = try String(contentsOfFile: c.intermediate, encoding: .utf8)
        let root = try String(contentsOfFile: c.root, encoding: .utf8)
        try (leaf + intermediate).write(toFile: c.chain, atomically: true, encoding: .utf8)
        try (leaf + intermediate + root).write(toFile: c.withRoot, atomically: true, encoding: .utf8)
        return c
    }

    @Test("The mock's own chain (a leaf its self-signed test CA signs) lacks a root, not an intermediate")
    func mockTestCAIsARoot() async throws {
        let files = try await Self.standIn()
        let (report, bySystem, command) = try await Self.withMock { port in
            (
                try await Self.check(port, .caFile(files.root)),
                try await Self.check(port, .system, bundle: files.root),
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

    @Test("A private chain (openssl): each missing certificate classified by what the served chain shows")
    func privateChainCases() async throws {
        try await withTemporaryDirectory { dir in
            let c = try await Self.privateChain(in: dir)
            func serve(_ chain: String, _ anchors: ServerTrustCheck.Anchors) async throws -> ServerTrustReport {
                try await Self.withMock(chain: chain, key: c.key) { port in try await Self.check(port, anchors) }
            }
            // Served whole, against its root: trusted, the root from the CA file.
            let trusted = try await serve(c.chain, .caFile(c.root))
            #expect(trusted.verdict == .trusted, "\(trusted)")
            #expect(trusted.root?.commonName == PrivateChain.rootName && trusted.rootSource == .trustStore)

            // Leaf alone, its issuer a name the check does not know: it may be either, and says so.
            let leafOnly = try await serve(c.leaf, .caFile(c.root))
            #expect(leafOnly.missingKind == .issuer, "\(leafOnly)")
            #expect(leafOnly.missingIssuerCommonName == PrivateChain.intermediateName)
            #expect(leafOnly.problem?.contains("either a root") == true, "\(leafOnly.problem ?? "")")
            #expect(leafOnly.fix?.contains("the server must send it") == true, "\(leafOnly.fix ?? "")")
            // A leaf the root signs directly, against another store: also either.
            let direct = try await serve(c.direct, .caFile(Self.testCA))
            #expect(direct.missingKind == .issuer, "\(direct)")
            #expect(direct.missingIssuerCommonName == PrivateChain.rootName)
            // ... and trusted by its root.
            #expect(try await serve(c.direct, .caFile(c.root)).verdict == .trusted)

            // Leaf and intermediate against another store: the intermediate's issuer is the root.
            let noRoot = try await serve(c.chain, .caFile(Self.testCA))
            #expect(noRoot.missingKind == .root, "\(noRoot)")
            #expect(noRoot.missingIssuerCommonName == PrivateChain.rootName)
            #expect(
                noRoot.problem
                    == "the chain ends in the root \"\(PrivateChain.rootName)\", which the CA file \(Self.testCA) does not hold"
            )
            // The root sent by the server: named a root, sent.
            let sentRoot = try await serve(c.withRoot, .caFile(Self.testCA))
            #expect(sentRoot.missingKind == .root, "\(sentRoot)")
            #expect(sentRoot.rootSource == .served && sentRoot.root?.commonName == PrivateChain.rootName)
            #expect(sentRoot.problem?.contains("sent by the server") == true, "\(sentRoot.problem ?? "")")
        }
    }

    @Test("Pins: a pin of the stand-in's root matches with its root file; without it the fix names the real root")
    func pinOfTheStandInRoot() async throws {
        let files = try await Self.standIn()
        let rootReport = try await Self.withMock(chain: files.chain, key: files.key) { port in
            try await Self.check(port, .caFile(files.root))
        }
        let root = try #require(rootReport.root)
        let rootPin = "sha256/" + root.spkiSHA256
        let (alone, completed, command, commandAlone) = try await Self.withMock(chain: files.chain, key: files.key) {
            port in
            (
                try await Self.check(port, .pins([try .init(rootPin)]), bundle: Self.testCA),
                try await Self.check(port, .pins([try .init(rootPin)], caFile: files.root)),
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
            try await Self.openssl(["rehash", partly], in: dir)
            try FileManager.default.copyItem(atPath: files.root, toPath: partly + "/usertrust.pem")

            let (missing, file, none, noLinks, partial) = try await Self.withMock(
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
