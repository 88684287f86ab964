internal import COpenSSL
import Foundation
import KKPushCore

/// What a CA folder holds, read before OpenSSL is given it.
///
/// OpenSSL looks a certificate up in a folder only under its subject hash, `<hash>.0` (`openssl rehash`,
/// `c_rehash` and `update-ca-certificates` make those names, as links); a folder of certificates without them is an
/// empty store to it, and a check against it would say the folder "does not hold" a root it holds. So the folder is
/// read first: a path that is not a folder, a folder with no certificate and a folder with certificates but no
/// hash names are input errors (exit 2 on the command line) with the fix; a certificate that lacks its hash name in
/// an otherwise hashed folder is kept, so a verdict that misses it can say to rehash.
struct CAFolderContents {
    /// A certificate of the folder.
    struct Entry {
        /// The file it is in (a name inside the folder).
        var file: String
        /// Its subject, RFC 2253 (as ``ServerCertificate/subject``).
        var subject: String
        var commonName: String?
        /// The name OpenSSL looks it up under: its subject hash and `.0`.
        var hashName: String
    }

    /// How many certificates the folder's files hold (a certificate linked under two names counts twice).
    var certificates: Int
    /// Certificates in files of other names whose copy is under no `<hash>.<n>` name: OpenSSL does not find them.
    var unlinked: [Entry]

    /// At most this many folder entries are read (Debian's /etc/ssl/certs holds about 300).
    static let maximumEntries = 20_000
    /// A file larger than this is not read (a CA bundle is about 200 KB).
    static let maximumFileBytes = 8 << 20

    /// Reads the folder `path`. Throws ``KKPushError/Code/trustAnchorsUnreadable`` for a path that is missing or not
    /// a folder, a folder with no certificate OpenSSL reads, and one whose certificates have no hash names.
    static func read(_ path: String) throws -> CAFolderContents {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw KKPushError(
                code: .trustAnchorsUnreadable, message: "The CA folder \(path) does not exist (caPath).",
                fix: "Give a folder of CA certificates named by subject hash, such as /etc/ssl/certs.")
        }
        guard isDirectory.boolValue else {
            throw KKPushError(
                code: .trustAnchorsUnreadable, message: "\(path) is a file, not a folder (caPath).",
                fix: "Give a PEM file of CA certificates as a CA file (caFile), or a folder of certificates here.")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw KKPushError(
                code: .trustAnchorsUnreadable,
                message: "The CA folder \(path) cannot be read (caPath): \(ErrorWords.describe(error)).",
                fix: "Give a folder this user may read.")
        }
        var linkedDigests: Set<[UInt8]> = []
        var others: [(entry: Entry, digest: [UInt8])] = []
        var count = 0
        for name in names.prefix(maximumEntries) {
            let file = (path as NSString).appendingPathComponent(name)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue,
                let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int,
                size <= maximumFileBytes, let data = FileManager.default.contents(atPath: file)
            else { continue }
            let hashNamed = isHashName(name)
            for x509 in certificates(in: data) {
                defer { X509_free(x509) }
                count += 1
                let digest = CertificateReading.certificateSHA256(x509)
                if hashNamed {
                    linkedDigests.insert(digest)
                } else {
                    let described = CertificateReading.describe(x509)
                    let hash = String(format: "%08lx", UInt(X509_subject_name_hash(x509)))
                    others.append(
                        (
                            Entry(
                                file: name, subject: described.subject, commonName: described.commonName,
                                hashName: hash + ".0"), digest
                        ))
                }
            }
        }
        guard count > 0 else {
            throw KKPushError(
                code: .trustAnchorsUnreadable,
                message: "The CA folder \(path) holds no certificate OpenSSL can read (caPath).",
                fix:
                    "Put the CA certificates in it as PEM files (-----BEGIN CERTIFICATE-----), then run openssl rehash \(path) to name them by subject hash; or give a PEM file as a CA file (caFile)."
            )
        }
        guard !linkedDigests.isEmpty else {
            let example = others.first.map { " (\($0.entry.file) as \($0.entry.hashName))" } ?? ""
            throw KKPushError(
                code: .trustAnchorsUnreadable,
                message:
                    "The CA folder \(path) holds \(count) certificate\(count == 1 ? "" : "s"), but none under its subject-hash name\(example), the only name OpenSSL looks a certificate up by (caPath).",
                fix:
                    "Run openssl rehash \(path) (c_rehash \(path) on older systems) to add the hash links, then check again; or give one PEM file of the certificates as a CA file (caFile)."
            )
        }
        return CAFolderContents(
            certificates: count, unlinked: others.filter { !linkedDigests.contains($0.digest) }.map(\.entry))
    }

    /// `<8 hex digits>.<n>`: a name `openssl rehash` gives a certificate (`.r<n>` is a CRL's).
    static func isHashName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 8, !parts[1].isEmpty else { return false }
        return parts[0].allSatisfy { $0.isHexDigit && !$0.isUppercase } && parts[1].allSatisfy(\.isASCII)
            && parts[1].allSatisfy(\.isNumber)
    }

    /// The PEM certificates in `data` (each to be freed by the caller); none for a file that is not PEM.
    static func certificates(in data: Data) -> [OpaquePointer] {
        ERR_clear_error()
        defer { ERR_clear_error() }
        return data.withUnsafeBytes { raw -> [OpaquePointer] in
            guard let base = raw.baseAddress, raw.count > 0, raw.count <= Int(Int32.max),
                let bio = BIO_new_mem_buf(base, Int32(raw.count))
            else { return [] }
            defer { BIO_free(bio) }
            var found: [OpaquePointer] = []
            // Bounded by the file's size: each certificate read consumes at least its PEM lines.
            while found.count < 10_000, let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                found.append(x509)
            }
            return found
        }
    }
}
