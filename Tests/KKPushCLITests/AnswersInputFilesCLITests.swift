import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Files and tokens that are not what a flag takes (a CA certificate, an HMAC device JWT, JSON where a path goes,
/// another certificate's key), each named in its role; and the repository's keys are the owner's alone after set-up.
@Suite("Input files and tokens that are not what the flag takes")
struct AnswersInputFilesCLITests {
    // MARK: 9, 10, 11, 13. Files and tokens that are not what the flag takes

    @Test("cert inspect of a CA certificate: exit 1, named as a certificate authority's")
    func caCertificate() async throws {
        let r = try await CLI.run(["cert", "inspect", Answers.certificates.appendingPathComponent("ca.crt").path])
        #expect(r.status == 1, "\(r.stdout)")
        #expect(r.stdout.contains("error certificate-not-apns"), "\(r.stdout)")
        #expect(r.stdout.contains("certificate authority"), "\(r.stdout)")
    }

    @Test("jwt decode of an HS256 device JWT: an HMAC, not an APNs token; points at token verify --bearer")
    func hmacToken() async throws {
        func b64(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let signature = Data(repeating: 7, count: 32).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let jwt =
            b64(#"{"alg":"HS256","typ":"JWT"}"#) + "." + b64(#"{"device_id":"d1","tenant":"vvw","iat":1}"#)
            + "." + signature
        let r = try await CLI.run(["jwt", "decode", jwt])
        #expect(r.stdout.contains("32 bytes (an HMAC"), "\(r.stdout)")
        #expect(!r.stdout.contains("DER?"), "\(r.stdout)")
        #expect(r.stdout.contains("kkpush token verify BODY --bearer"), "\(r.stdout)")
    }

    @Test(
        "JSON given to a file flag: 64, saying the flag takes a path or -",
        arguments: [
            (["payload", "lint", #"{"aps":{"alert":"x"}}"#], "The argument takes the path"),
            (
                [
                    "send", "--payload", #"{"aps":{"alert":"x"}}"#, "--token", "ab", "--topic", "t", "--url",
                    "https://127.0.0.1:9",
                    "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
                    "KKTEST0001",
                    "--team-id", "KKTEAM0001",
                ], "--payload takes the path"
            ),
        ])
    func inlineJSON(_ arguments: [String], _ expected: String) async throws {
        let r = try await CLI.run(arguments)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(expected) && r.stderr.contains("JSON itself"), "\(r.stderr)")
        #expect(r.stderr.contains("give - and pipe it in"), "\(r.stderr)")
    }

    @Test("A key that belongs to another certificate: both files named, each in its role")
    func keyOfAnotherCertificate() async throws {
        let crt = Answers.certificates.appendingPathComponent("client-production.crt").path
        let key = Answers.certificates.appendingPathComponent("client-development.key").path
        let r = try await CLI.run(["cert", "inspect", crt, "--key", key])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        #expect(
            r.stdout.contains("The private key in '\(key)' does not belong to the certificate in '\(crt)'."),
            "\(r.stdout)")
    }

    // MARK: 12. The repository's keys are not world-readable after set-up

    @Test("After .ci/setup the repository's test keys are the owner's alone: README examples print no warning")
    func testKeysPrivate() async throws {
        let sign = try await CLI.run([
            "jwt", "sign", "--key", Answers.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        #expect(sign.status == 0)
        #expect(
            !sign.stderr.contains("secret-file-permissions"),
            "run bash .ci/setup (it makes Certificates/*.p8, *.key, *.p12 mode 600): \(sign.stderr)")
    }
}
