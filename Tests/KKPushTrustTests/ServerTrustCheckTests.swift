import Foundation
import KKPushCore
import KKPushTestSupport
import KKPushTrust
import Testing

/// The trust check (`ServerTrustCheck`) against the mock over real TLS on 127.0.0.1: the mock's own test CA chain, a
/// port with nothing listening, and private chains made with the openssl command line, each missing certificate
/// classified by what the served chain shows. `kkpush tls check` and the stand-in chains `kkpush mock certs` makes
/// are tested in KKPushCLITests (ServerTrustTests).
@Suite("Server trust check (the mock, private chains)")
struct ServerTrustCheckTests {
    typealias F = ServerTrustFixtures

    static let testCA = F.testCA

    @Test("The mock's own test CA chain is trusted by the test CA, and its root comes from the CA file")
    func testCAChain() async throws {
        let report = try await F.withMock { port in try await F.check(port, .caFile(Self.testCA)) }
        #expect(report.verdict == .trusted, "\(report)")
        #expect(report.served.count == 1)
        #expect(report.served[0].commonName == "localhost")
        #expect(report.root?.commonName == "kkpush test CA")
        #expect(report.rootSource == .trustStore)
        #expect(report.alpn == "h2")
        #expect(report.serverName == nil, "an address is checked as an address, not sent as SNI")
    }

    @Test("No server on the port: a connection error, not a verdict")
    func nothingListening() async throws {
        let refusing = try RefusingLoopbackPort()
        await #expect {
            _ = try await F.check(refusing.port, .caFile(Self.testCA))
        } throws: { error in
            (error as? KKPushError)?.code == .trustConnect
        }
        withExtendedLifetime(refusing) {}
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

    static func privateChain(in folder: String) async throws -> PrivateChain {
        let c = PrivateChain(folder: folder)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await F.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "root.key", "-out", "root.crt", "-subj", "/CN=\(PrivateChain.rootName)", "-days", "30",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: folder)
        try await F.openssl(
            ["req"] + ec + [
                "-keyout", "intermediate.key", "-out", "intermediate.csr", "-subj",
                "/CN=\(PrivateChain.intermediateName)",
            ], in: folder)
        try await F.openssl(
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
            try await F.openssl(
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

    @Test("A private chain (openssl): each missing certificate classified by what the served chain shows")
    func privateChainCases() async throws {
        try await withTemporaryDirectory { dir in
            let c = try await Self.privateChain(in: dir)
            func serve(_ chain: String, _ anchors: ServerTrustCheck.Anchors) async throws -> ServerTrustReport {
                try await F.withMock(chain: chain, key: c.key) { port in try await F.check(port, anchors) }
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
}
