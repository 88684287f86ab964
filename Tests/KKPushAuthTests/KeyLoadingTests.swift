import Foundation
import KKPushAuth
import KKPushCore
import Testing

@Suite("Loading ES256 keys")
struct KeyLoadingTests {
    /// The body of a PEM file: its lines between the armour, joined (as kept in an environment variable).
    static func bareBody(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    @Test("Apple-style .p8 files load", arguments: ["AuthKey_KKTEST0001.p8", "AuthKey_KKTEST0002.p8"])
    func loadsP8File(name: String) throws {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path(name))
        let pem = try key.pemRepresentation()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // Written back, it loads to the same key.
        #expect(try ES256PrivateKey(pem: pem).publicKey == key.publicKey)
    }

    enum Form: String, CaseIterable, Sendable {
        case armoured, bareBody, bareBodyWithNewlines, crlf, surroundingWhitespace
    }

    @Test("A key loads in every accepted form", arguments: Form.allCases)
    func acceptedForms(form: Form) throws {
        let pem = try Fixtures.text("AuthKey_KKTEST0001.p8")
        let expected = try ES256PrivateKey(pem: pem).publicKey
        let input: String =
            switch form {
            case .armoured: pem
            case .bareBody: Self.bareBody(pem)
            case .bareBodyWithNewlines:
                pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined(separator: "\n")
            case .crlf: pem.replacingOccurrences(of: "\n", with: "\r\n")
            case .surroundingWhitespace: "\n  " + pem + "\n\n"
            }
        #expect(try ES256PrivateKey(pem: input).publicKey == expected)
    }

    @Test("A SEC1 'EC PRIVATE KEY' on P-256 loads too")
    func sec1() async throws {
        let result = try await run(["openssl", "ec", "-in", Fixtures.path("AuthKey_KKTEST0001.p8")])
        #expect(result.status == 0)
        #expect(result.stdoutText.contains("BEGIN EC PRIVATE KEY"))
        let key = try ES256PrivateKey(pem: result.stdoutText)
        #expect(
            key.publicKey == (try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))).publicKey)
    }

    struct Rejection: Sendable, CustomTestStringConvertible {
        var name: String
        var input: @Sendable () throws -> String
        var code: String
        var mentions: String
        var testDescription: String { name }
    }

    static let rejections: [Rejection] = [
        Rejection(
            name: "RSA", input: { try Fixtures.text("bad/rsa.p8") }, code: "key-not-ec", mentions: "RSA (2048-bit)"),
        Rejection(
            name: "RSA bare body", input: { bareBody(try Fixtures.text("bad/rsa.p8")) }, code: "key-not-ec",
            mentions: "RSA"),
        Rejection(
            name: "P-384", input: { try Fixtures.text("bad/p384.p8") }, code: "key-not-p256", mentions: "secp384r1"),
        Rejection(
            name: "P-384 bare body", input: { bareBody(try Fixtures.text("bad/p384.p8")) }, code: "key-not-p256",
            mentions: "384-bit"),
        Rejection(
            name: "encrypted", input: { try Fixtures.text("bad/encrypted.p8") }, code: "key-encrypted",
            mentions: "encrypted"),
        Rejection(
            name: "encrypted bare body", input: { bareBody(try Fixtures.text("bad/encrypted.p8")) },
            code: "key-encrypted", mentions: "ENCRYPTED"),
        Rejection(name: "garbage", input: { "this is not a key at all!" }, code: "key-unreadable", mentions: "neither"),
        Rejection(
            name: "base64 garbage", input: { "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=" }, code: "key-unreadable",
            mentions: "not a DER key"),
        Rejection(name: "empty", input: { "  \n" }, code: "key-empty", mentions: "empty"),
        Rejection(
            name: "truncated PEM", input: { String(try Fixtures.text("AuthKey_KKTEST0001.p8").dropLast(30)) },
            code: "key-unreadable", mentions: "END"),
        Rejection(
            name: "certificate", input: { try Fixtures.text("server.crt") }, code: "key-is-certificate",
            mentions: "certificate"),
        Rejection(
            name: "public key", input: { try ES256PrivateKey.generate().publicKey.pemRepresentation() },
            code: "key-is-public",
            mentions: "public key"),
    ]

    @Test("Anything but a P-256 private key is refused, saying what was found", arguments: rejections)
    func rejects(rejection: Rejection) throws {
        let input = try rejection.input()
        do {
            _ = try ES256PrivateKey(pem: input)
            Issue.record("\(rejection.name) was accepted")
        } catch let error as KKPushError {
            #expect(error.code.rawValue == rejection.code, "\(error)")
            #expect(error.message.contains(rejection.mentions), "\(error.message)")
            #expect(error.fix != nil)
        }
    }

    @Test("A missing key file names the path")
    func missingFile() {
        #expect {
            try ES256PrivateKey(contentsOfFile: "/nonexistent/AuthKey_X.p8")
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == "file-missing"
                && (error as? KKPushError)?.message.contains("/nonexistent/AuthKey_X.p8") == true
        }
    }

    @Test("A key path that is a folder, named by the label the caller gives it: InputFile's messages")
    func folderAndLabel() {
        #expect {
            try ES256PrivateKey(contentsOfFile: "/tmp", label: "(keyPath)")
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == "file-is-directory"
                && (error as? KKPushError)?.message == "The key (keyPath) /tmp is a folder, not a file."
        }
        #expect {
            try ES256PublicKey(contentsOfFile: "/nonexistent/AuthKey_X.p8")
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == "file-missing"
        }
    }

    @Test("A PEM holding two keys is refused: kkpush cannot tell which one to use")
    func twoKeys() throws {
        let a = try ES256PrivateKey.generate().pemRepresentation()
        let b = try ES256PrivateKey.generate().pemRepresentation()
        #expect {
            try ES256PrivateKey(pem: a + b)
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == "key-multiple"
        }
    }

    @Test("Public keys load from SPKI PEM, bare SPKI, and from a .p8")
    func publicKeys() async throws {
        let key = try ES256PrivateKey.generate()
        let spki = try key.publicKey.pemRepresentation()
        #expect(spki.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(try ES256PublicKey(pem: spki) == key.publicKey)
        #expect(try ES256PublicKey(pem: Self.bareBody(spki)) == key.publicKey)
        #expect(try ES256PublicKey(pem: key.pemRepresentation()) == key.publicKey)
        // openssl derives the same public key from the .p8.
        let derived = try await run(["openssl", "pkey", "-pubout", "-in", Fixtures.path("AuthKey_KKTEST0001.p8")])
        #expect(derived.status == 0)
        #expect(
            try ES256PublicKey(pem: derived.stdoutText)
                == ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8")).publicKey)
        #expect(throws: KKPushError.self) { try ES256PublicKey(pem: Fixtures.text("bad/p384.p8")) }
    }

    @Test("Generated keys differ and sign 64-byte raw signatures")
    func generated() throws {
        let a = try ES256PrivateKey.generate()
        let b = try ES256PrivateKey.generate()
        #expect(a.publicKey != b.publicKey)
        let message = Array("hello".utf8)
        let signature = try a.signature(for: message)
        #expect(signature.count == 64)
        #expect(a.publicKey.isValidSignature(signature, for: message))
        #expect(!b.publicKey.isValidSignature(signature, for: message))
        #expect(!a.publicKey.isValidSignature(signature, for: Array("hellO".utf8)))
    }

    @Test("Raw and DER signatures convert both ways")
    func signatureConversion() throws {
        let key = try ES256PrivateKey.generate()
        let message = Array("convert me".utf8)
        let der = try key.derSignature(for: message)
        #expect(der.first == 0x30)
        let raw = try ECDSASignature.raw(fromDER: der)
        #expect(raw.count == 64)
        #expect(try ECDSASignature.der(fromRaw: raw) == der)
        #expect(key.publicKey.isValidSignature(raw, for: message))
        #expect(key.publicKey.isValidSignature(der, for: message))
        #expect(throws: KKPushError.self) { try ECDSASignature.der(fromRaw: Array(raw.prefix(63))) }
        #expect(throws: KKPushError.self) { try ECDSASignature.raw(fromDER: [0x30, 0x02, 0x01]) }
    }

    @Test("One key signs from 100 concurrent tasks; every signature verifies")
    func concurrentSigning() async throws {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let message = Array("message \(index)".utf8)
                    let signature = try key.signature(for: message)
                    return signature.count == 64 && key.publicKey.isValidSignature(signature, for: message)
                        && !key.publicKey.isValidSignature(signature, for: message + [0])
                }
            }
            var all: [Bool] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0 })
    }
}
