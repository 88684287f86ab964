import Foundation
import KKPushCore
import KKPushSystem
import KKPushTestSupport
import Testing

@testable import KKPushTrust

/// The reports of `tls check` and `mock certs --chain`, as KKPushTrust makes them: a stand-in chain written into a
/// folder (real keys and certificates through OpenSSL), the trust report's JSON field names, and `HOST[:PORT]`.
@Suite("Trust reports")
struct TrustReportTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    static let certificateKeys: Set<String> = [
        "subject", "issuer", "common_name", "not_before", "not_after", "key_type", "key_bits", "sha256",
        "spki_sha256", "self_issued", "ca",
    ]

    @Test("A stand-in chain written into a folder: five files, the key private, and never replaced without asking")
    func standInFiles() throws {
        try withTemporaryDirectory(prefix: "kkpush-standin") { dir in
            let out = OutputFolder(dir + "/chain", label: "(out)", forceLabel: "(force)")
            let report = try StandInChainReport.write(
                shape: StandInChain.appleUSERTrust, hostNames: ["mock.example.test"], addresses: ["127.0.0.1"],
                days: 30, out: out, replace: false)
            for name in StandInChainReport.files {
                #expect(FileManager.default.fileExists(atPath: out.file(name)), "\(name)")
            }
            let mode = try FileManager.default.attributesOfItem(atPath: report.privateKey)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(report.certificates.first?.displayName == ServerTrustCheck.appleRootName)
            #expect(report.certificates.last?.displayName == "mock.example.test")
            let o = try Self.object(report)
            #expect(
                Set(o.keys) == [
                    "chain", "certificate_chain", "private_key", "leaf", "intermediate", "root", "host_names",
                    "addresses", "certificates",
                ])
            #expect(o["chain"] as? String == "usertrust" && o["root"] as? String == out.file("root.crt"))
            let certificate = try #require((o["certificates"] as? [[String: Any]])?.first)
            #expect(Set(certificate.keys) == Self.certificateKeys)
            #expect((certificate["not_after"] as? String)?.hasSuffix("Z") == true)

            let again = try #require(throws: KKPushError.self) {
                try StandInChainReport.write(
                    shape: StandInChain.appleUSERTrust, hostNames: ["mock.example.test"], addresses: [], days: 30,
                    out: out, replace: false)
            }
            #expect(again.code == .outputExists && again.fix?.contains("(force)") == true)
            _ = try StandInChainReport.write(
                shape: StandInChain.appleUSERTrust, hostNames: ["mock.example.test"], addresses: [], days: 30,
                out: out, replace: true)
        }
    }

    @Test("The trust report's JSON: every field, null for the unknown, the missing root named with its kind")
    func reportFields() throws {
        let chain = try StandInChain.make(hostNames: ["localhost"], addresses: [], days: 1, rootKeyBits: 2048)
        var report = ServerTrustReport(
            host: "127.0.0.1", port: 2197, serverName: nil, tlsVersion: "TLSv1.3", alpn: "h2",
            served: Array(chain.certificates.prefix(2)), root: nil, rootSource: nil,
            anchors: .pins(["sha256/AAAA"], completedFrom: nil), verdict: .notTrusted, verifyCode: 20,
            problem: "unable to get local issuer certificate", missingIssuer: chain.certificates[1].issuer,
            missingIssuerCommonName: ServerTrustCheck.appleRootName, missingKind: .root, matchedPin: nil,
            fix: "Install the root (caFile).")
        report.storeHasNamesake = true
        let o = try Self.object(report)
        #expect(
            Set(o.keys) == [
                "host", "port", "server_name", "tls_version", "alpn", "chain", "root", "root_source", "trust_store",
                "verdict", "trusted", "verify_code", "problem", "missing", "matched_pin", "fix",
            ])
        #expect(o["verdict"] as? String == "not-trusted" && o["trusted"] as? Bool == false)
        #expect(o["root"] is NSNull && o["server_name"] is NSNull && o["verify_code"] as? Int == 20)
        #expect((o["chain"] as? [[String: Any]])?.count == 2)
        let store = try #require(o["trust_store"] as? [String: Any])
        #expect(store["kind"] as? String == "pins" && store["completed_from"] is NSNull)
        let missing = try #require(o["missing"] as? [String: Any])
        #expect(Set(missing.keys) == ["name", "common_name", "kind", "store_has_namesake", "unhashed_file"])
        #expect(missing["kind"] as? String == "root" && missing["store_has_namesake"] as? Bool == true)

        report.verdict = .trusted
        report.missingIssuer = nil
        report.anchors = .caFolder(path: "/etc/ssl/certs")
        let trusted = try Self.object(report)
        #expect(trusted["missing"] is NSNull && trusted["trusted"] as? Bool == true)
        #expect((trusted["trust_store"] as? [String: Any])?["kind"] as? String == "ca-path")
    }

    @Test("HOST[:PORT]: a name, an address, an IPv6 address in brackets; a port out of range is none")
    func hostAndPort() {
        #expect(ServerTrustCheck.hostAndPort("api.push.apple.com")! == ("api.push.apple.com", 443))
        #expect(ServerTrustCheck.hostAndPort("127.0.0.1:2197")! == ("127.0.0.1", 2197))
        #expect(ServerTrustCheck.hostAndPort("[::1]:2197")! == ("::1", 2197))
        #expect(ServerTrustCheck.hostAndPort("::1")! == ("::1", 443))
        #expect(ServerTrustCheck.hostAndPort("host:0") == nil && ServerTrustCheck.hostAndPort("host:x") == nil)
        #expect(ServerTrustCheck.hostAndPort(":443") == nil)
    }
}
