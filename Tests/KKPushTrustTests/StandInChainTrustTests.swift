import Foundation
import KKPushCore
import KKPushTestSupport
import KKPushTrust
import Testing

/// The trust check (`ServerTrustCheck`) on a stand-in of Apple's USERTrust chain (made by the engine,
/// `StandInChainReport.write`, as `kkpush mock certs --chain usertrust` makes it) that the mock serves over real
/// TLS on 127.0.0.1: trust stores with and without the root (a file, a bundle, a hashed folder, a namesake), pin sets,
/// and a server that omits its intermediate. The command's own chain and `kkpush tls check` are tested in
/// KKPushCLITests (ServerTrustTests).
@Suite("Server trust check on the USERTrust stand-in")
struct StandInChainTrustTests {
    typealias F = ServerTrustFixtures

    static let testCA = F.testCA

    @Test("The stand-in chain has the real root's name and shape, with keys made here")
    func standInShape() async throws {
        let files = try await F.standIn()
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

    @Test("The USERTrust stand-in: trusted with its root in the CA file, not with the test CA alone")
    func standInTrustedAndNot() async throws {
        let files = try await F.standIn()
        let (trusted, refused) = try await F.withMock(chain: files.chain, key: files.key) { port in
            (try await F.check(port, .caFile(files.root)), try await F.check(port, .caFile(Self.testCA)))
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
        let files = try await F.standIn()
        let other = try StandInChain.make(hostNames: ["localhost"], addresses: [], rootKeyBits: 2048)
        try await withTemporaryDirectory { dir in
            let namesake = dir + "/namesake.crt"
            try other.rootPEM.write(toFile: namesake, atomically: true, encoding: .utf8)
            let report = try await F.withMock(chain: files.chain, key: files.key) { port in
                try await F.check(port, .caFile(namesake))
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
        let files = try await F.standIn()
        try await withTemporaryDirectory { dir in
            let bundle = dir + "/bundle.crt"
            let text =
                try String(contentsOfFile: Self.testCA, encoding: .utf8)
                + String(contentsOfFile: files.root, encoding: .utf8)
            try text.write(toFile: bundle, atomically: true, encoding: .utf8)
            let report = try await F.withMock(chain: files.chain, key: files.key) { port in
                try await F.check(port, .caFile(bundle))
            }
            #expect(report.verdict == .trusted)
            #expect(report.anchors == .caFile(path: bundle))
        }
    }

    @Test("A CA folder in subject-hash layout (openssl rehash) with the root trusts the chain; without it, not")
    func caFolder() async throws {
        let files = try await F.standIn()
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
            let (trusted, refused) = try await F.withMock(chain: files.chain, key: files.key) { port in
                (try await F.check(port, .caFolder(with)), try await F.check(port, .caFolder(without)))
            }
            #expect(trusted.verdict == .trusted, "\(trusted)")
            #expect(trusted.anchors == .caFolder(path: with))
            #expect(refused.verdict == .notTrusted)
            #expect(refused.missingIssuerCommonName == "USERTrust RSA Certification Authority")
        }
    }

    @Test("A pin set: the root's key (completed from a bundle) or the intermediate's fingerprint match; others do not")
    func pins() async throws {
        let files = try await F.standIn()
        let probe = try await F.withMock(chain: files.chain, key: files.key) { port in
            try await F.check(port, .caFile(files.root))
        }
        let root = try #require(probe.root)
        let intermediate = probe.served[1]
        let otherPin = try ServerTrustCheck.Pin("sha256/" + Data(repeating: 7, count: 32).base64EncodedString())
        let (byRoot, byIntermediate, byNone) = try await F.withMock(chain: files.chain, key: files.key) { port in
            (
                try await F.check(port, .pins([try .init("sha256/" + root.spkiSHA256)]), bundle: files.root),
                try await F.check(port, .pins([try .init(intermediate.sha256)]), bundle: Self.testCA),
                try await F.check(port, .pins([otherPin]), bundle: files.root)
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
        let files = try await F.standIn()
        let report = try await F.withMock(chain: files.leaf, key: files.key) { port in
            try await F.check(port, .caFile(files.root))
        }
        #expect(report.served.count == 1)
        #expect(report.verdict == .notTrusted)
        #expect(!report.missingIsRoot)
        #expect(report.missingIssuerCommonName == "Apple Public Server RSA CA 12 - G1")
        #expect(report.problem?.contains("sent only its own certificate") == true, "\(report.problem ?? "")")
    }
}
