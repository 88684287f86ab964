import ArgumentParser

/// Standard input can be read once: when several flags of one command name `-`, the command refuses before
/// reading any of them (the second would find it empty and blame the wrong file).
enum StandardInput {
    /// Throws a usage error naming the flags when more than one of `uses` (flag, value) is `-`.
    static func checkOneReader(_ uses: [(flag: String, value: String?)]) throws {
        let readers = uses.filter { $0.value == "-" }.map(\.flag)
        guard readers.count > 1 else { return }
        let listed = readers.map { "\($0) -" }.joined(separator: ", ")
        throw ValidationError(
            "\(listed) would all read standard input, which can be read once; give all but one of them as files"
                + (readers.contains("--cert-password-file") ? " (or the password in APNS_CERT_PASSWORD)." : "."))
    }
}

extension ConnectionOptions {
    /// The connection flags that can name `-` (standard input).
    var standardInputUses: [(flag: String, value: String?)] {
        [
            ("--key", keyOption), ("--cert", cert), ("--cert-key", certKey), ("--cert-password-file", certPasswordFile),
            ("--ca-file", caFile),
        ]
    }
}
