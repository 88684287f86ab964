/// How kkpush shows a secret or a device token in logs, messages and output: the one redaction rule.
///
/// Only a short prefix is shown, followed by `…`; a secret too short for a prefix to hide most of it
/// (fewer than ``minimumShownLength`` characters, or no longer than the prefix) is fully masked, one `•`
/// per character.
public enum Redaction {
    /// Secrets shorter than this are never shown in part.
    public static let minimumShownLength = 12

    /// The first `keep` characters (12 by default) and `…`: `1a2b3c4d5e6f…`; `••••••••` for a short secret.
    public static func prefix(_ secret: String, keep: Int = 12) -> String {
        let count = secret.count
        if count < minimumShownLength || count <= keep { return String(repeating: "•", count: count) }
        return String(secret.prefix(keep)) + "…"
    }

    /// The first `keep` characters (4 by default) and the length: `s3cr… (40 characters)`; a short
    /// secret is `•••••• (6 characters)`.
    public static func hint(_ secret: String, keep: Int = 4) -> String {
        let count = secret.count
        let shown =
            count < minimumShownLength || count <= keep
            ? String(repeating: "•", count: count) : "\(secret.prefix(keep))…"
        return "\(shown) (\(count) characters)"
    }
}
