public import Foundation

/// What the CMS signature of a provisioning profile says: whether it verifies, and whether its signer chains to a
/// trusted root.
///
/// The checks are made apart, so that the failures are told apart: the signature over the plist is checked with the
/// signer certificate the CMS carries (OpenSSL's `CMS_verify` with `CMS_NO_SIGNER_CERT_VERIFY`), then the signer
/// certificate is chained to the trusted roots with the CMS's other certificates as untrusted intermediates
/// (`X509_verify_cert`), and must be a provisioning profile signing certificate, as Security framework's policy for
/// profiles requires: common name "Apple iPhone OS Provisioning Profile Signing" or "Mac OS X Provisioning Profile
/// Signing", or one of Apple's marker extensions for them (1.2.840.113635.100.6.2.2.1, 1.2.840.113635.100.6.58,
/// 1.2.840.113635.100.4.11). The chain is checked without looking at dates (`X509_V_FLAG_NO_CHECK_TIME`): Apple's
/// intermediates expire while the profiles they signed are still in use, and a profile's own expiry is
/// ``ProvisioningProfile/expirationDate``, reported apart.
public struct ProfileSignature: Sendable, Hashable {
    /// The outcome.
    public enum State: String, Sendable, Codable {
        /// The CMS signature over the content verifies and the signer chains to a trusted root.
        case verified
        /// The CMS signature verifies, but the signer does not chain to a trusted root; or it does, but is not a
        /// provisioning profile signing certificate (every Apple developer certificate chains to Apple Root CA too).
        case chainUntrusted = "chain-untrusted"
        /// The CMS signature does not verify: the content or the signature was changed after signing, or the signer
        /// certificate is not in the CMS.
        case invalid
        /// The file is a bare property list, with no signature at all.
        case unsigned
    }

    /// The outcome.
    public var state: State
    /// The signer certificate's common name ("Apple iPhone OS Provisioning Profile Signing"), or its whole subject
    /// (RFC 2253, as ``SigningCertificate/subject``) when it has no common name; nil when unsigned or not found.
    public var signerSubject: String?
    /// The common name (or whole name) of the signer certificate's issuer; nil when unsigned or not found.
    public var signerIssuer: String?
    /// The common name (or whole subject) of each certificate from the signer up: the chain OpenSSL built to the
    /// trust anchor when the chain verified, else as far as it got with the CMS's own certificates.
    public var chain: [String]
    /// The common name of the trusted root the signer chained to; nil unless the state is ``State/verified``.
    public var trustAnchor: String?
    /// One sentence on the outcome; OpenSSL's reason when a check failed.
    public var detail: String

    /// Creates a signature report.
    public init(
        state: State, signerSubject: String? = nil, signerIssuer: String? = nil, chain: [String] = [],
        trustAnchor: String? = nil, detail: String
    ) {
        self.state = state
        self.signerSubject = signerSubject
        self.signerIssuer = signerIssuer
        self.chain = chain
        self.trustAnchor = trustAnchor
        self.detail = detail
    }
}

/// A certificate listed in a profile's `DeveloperCertificates`: one the app may be signed with.
public struct SigningCertificate: Sendable, Hashable {
    /// The subject on one line in RFC 2253 form, most specific first, with UTF-8 kept, as
    /// `openssl x509 -noout -subject -nameopt RFC2253,-esc_msb` prints it without `subject=`:
    /// `UID=…,CN=Apple Distribution: Name (TEAMID),OU=TEAMID,O=Name,C=NL`.
    public var subject: String
    /// The common name: "Apple Distribution: Kantine Koning (test) (KKTEAM0001)".
    public var commonName: String?
    /// The organizational unit: the team identifier.
    public var organizationalUnit: String?
    /// The start of the validity period.
    public var notBefore: Date?
    /// The end of the validity period.
    public var notAfter: Date?
    /// The SHA-1 of the DER in uppercase hex without separators, as Xcode and `security find-identity` show it.
    public var sha1: String
    /// The serial number in uppercase hex (`openssl x509 -serial`), a `-` first if negative.
    public var serialNumber: String

    /// Creates a certificate description.
    public init(
        subject: String, commonName: String? = nil, organizationalUnit: String? = nil, notBefore: Date? = nil,
        notAfter: Date? = nil, sha1: String, serialNumber: String
    ) {
        self.subject = subject
        self.commonName = commonName
        self.organizationalUnit = organizationalUnit
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.sha1 = sha1
        self.serialNumber = serialNumber
    }
}
