internal import COpenSSL
import Foundation
import KKPushCore
import KKPushSystem

/// Owns an `X509` and frees it on deinit. Only read after creation, so it may be shared.
final class X509Handle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { X509_free(pointer) }

    /// Parses one DER certificate; nil if the bytes are not exactly one certificate.
    static func parse(der: [UInt8]) -> X509Handle? {
        OpenSSLErrorQueue.clear()
        var consumed = 0
        let x509 = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            let result = d2i_X509(nil, &pointer, buffer.count)
            if let pointer, let base = buffer.baseAddress { consumed = pointer - base }
            return result
        }
        guard let x509 else { return nil }
        let handle = X509Handle(x509)
        return consumed == der.count ? handle : nil
    }

    /// The DER encoding.
    func der() throws -> [UInt8] {
        OpenSSLErrorQueue.clear()
        guard let bytes = derBytes({ i2d_X509(pointer, $0) }) else {
            throw OpenSSLErrorQueue.error(
                code: .certificateEncode, message: "OpenSSL could not encode the certificate.")
        }
        return bytes
    }

    /// The PEM encoding (`-----BEGIN CERTIFICATE-----`).
    func pem() throws -> String { PEMBlock.encode(label: "CERTIFICATE", der: try der()) }
}

/// Certificates from a PEM text (every CERTIFICATE block, in order) or a DER file.
enum CertificateDecoder {
    static func certificates(from bytes: [UInt8], source: String) throws -> [X509Handle] {
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN ") {
            guard let blocks = PEMBlock.blocks(in: text) else {
                throw KKPushError(
                    code: .certificateUnreadable, message: "\(source) has PEM armour but a body that is not base64.",
                    fix: "Check the file is not truncated.")
            }
            let certificates = try blocks.filter { $0.block.label.hasSuffix("CERTIFICATE") }.map { entry in
                guard let handle = X509Handle.parse(der: entry.block.der) else {
                    throw OpenSSLErrorQueue.error(
                        code: .certificateUnreadable, message: "\(source) has a CERTIFICATE block OpenSSL cannot parse."
                    )
                }
                return handle
            }
            guard !certificates.isEmpty else {
                throw KKPushError(
                    code: .certificateMissing,
                    message:
                        "\(source) is PEM but holds no certificate (found: \(blocks.map(\.block.label).joined(separator: ", "))).",
                    fix: "Give the certificate file (-----BEGIN CERTIFICATE-----), a DER .cer, or a .p12.")
            }
            return certificates
        }
        if let handle = X509Handle.parse(der: bytes) { return [handle] }
        throw OpenSSLErrorQueue.error(
            code: .certificateUnreadable,
            message: "\(source) is neither a PEM nor a DER certificate.",
            fix: "Give a PEM certificate, a DER .cer as downloaded from Apple, or a .p12.")
    }
}

/// The largest certificate or `.p12` file read, in bytes: a certificate with its chain is a few kilobytes.
let maximumCertificateFileSize = 1 << 20

/// Reads a whole certificate, `.p12` or key file through ``InputFile``: a missing file, a folder, an
/// unreadable, empty or far too large file each get their own message naming the path (and `label`, if
/// the caller knows which option or setting gave it). `what` names the content ("certificate", ".p12", "key").
func readFileBytes(_ path: String, what: String, label: String? = nil) throws -> [UInt8] {
    try InputFile.read(path, what: what, label: label, maximumSize: maximumCertificateFileSize)
}
