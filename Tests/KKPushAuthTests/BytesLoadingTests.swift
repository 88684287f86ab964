import Foundation
import KKPushAuth
import KKPushCore
import Testing

/// The bytes-based loaders read what the path-based ones read once the file is in memory.
@Suite("Loading certificates and credentials from bytes")
struct BytesLoadingTests {
    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(name))))
    }

    @Test(".p12 bytes give the credential the file gives; errors name the given name")
    func pkcs12() throws {
        let fromBytes = try ClientCredential.loadPKCS12(bytes: Self.bytes("client-universal.p12"), password: "kkpush")
        let fromFile = try ClientCredential.loadPKCS12(path: Fixtures.path("client-universal.p12"), password: "kkpush")
        #expect(fromBytes.info == fromFile.info)
        #expect(try fromBytes.privateKeyPEM() == fromFile.privateKeyPEM())
        let error = #expect(throws: KKPushError.self) {
            try ClientCredential.loadPKCS12(
                bytes: Self.bytes("client-universal.p12"), password: "wrong", name: "push.p12")
        }
        #expect(error?.code.rawValue == "p12-password")
        #expect(error?.message.contains("'push.p12'") == true)
    }

    @Test("PEM certificate and key bytes give the credential the files give")
    func pem() throws {
        let fromBytes = try ClientCredential.loadPEM(
            certificate: Self.bytes("client-production.crt"), key: Self.bytes("client-production.key"), password: nil)
        let fromFiles = try ClientCredential.loadPEM(
            certificatePath: Fixtures.path("client-production.crt"), keyPath: Fixtures.path("client-production.key"),
            password: nil)
        #expect(fromBytes.info == fromFiles.info)
        #expect(throws: KKPushError.self) {
            try ClientCredential.loadPEM(
                certificate: Self.bytes("client-universal.crt"), key: Self.bytes("client-production.key"), password: nil
            )
        }
    }

    @Test(
        "CertificateInfo(bytes:) reads PEM, DER and .p12 as the file reader does",
        arguments: [
            "client-universal.crt", "client-universal.p12", "ca.crt",
        ])
    func certificateInfo(file: String) throws {
        let fromFile = try CertificateInfo(contentsOfFile: Fixtures.path(file), password: "kkpush")
        #expect(try CertificateInfo(bytes: Self.bytes(file), password: "kkpush") == fromFile)
    }

    @Test("CertificateInfo(bytes:) refuses what is no certificate")
    func notACertificate() throws {
        #expect(throws: KKPushError.self) { try CertificateInfo(bytes: Array("hello".utf8)) }
    }
}
