import KKPushCore

/// The backend's name for ``JSONInput``'s short messages (kept so callers need not change): every
/// decoding error of kkpush is put into words by ``JSONInput`` in KKPushCore.
public enum JSONInputMessage {
    /// ``JSONInput/clause(for:choices:)``.
    public static func describe(_ error: any Error, choices: [String: [String]] = [:]) -> String {
        JSONInput.clause(for: error, choices: choices)
    }

    /// ``JSONInput/syntaxProblem(_:)``.
    public static func syntaxError(_ bytes: [UInt8]) -> String? {
        JSONInput.syntaxProblem(bytes)
    }

    /// ``JSONInput/fieldPath(_:)``.
    public static func path(_ keys: [any CodingKey]) -> String {
        JSONInput.fieldPath(keys)
    }
}
