internal import COpenSSL

/// The OpenSSL kkpush runs against.
public struct OpenSSLInfo: Sendable, Codable, Equatable {
    /// The version text, for example `OpenSSL 3.0.19 27 Jan 2026`.
    public var versionText: String
    /// The numeric version (`0xMNN00PP0L`).
    public var versionNumber: UInt

    /// The OpenSSL loaded at run time.
    public static var current: OpenSSLInfo {
        OpenSSLInfo(
            versionText: kk_openssl_version_text().map { String(cString: $0) } ?? "unknown",
            versionNumber: UInt(kk_openssl_version_number()))
    }

    /// True for OpenSSL 3.0 or later (kkpush uses the EVP API of 3.0).
    public var isVersion3OrLater: Bool { versionNumber >= 0x3000_0000 }
}
