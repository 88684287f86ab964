/// The key a Live Activity is known by between the server and the app: the activity registry starts it with the key
/// in `attributes.kk_activity_key`, and the app reports the activity's update token with the same key. One rule on
/// both sides, checked here once: 1-200 printable ASCII characters (space to tilde). The registry's checks
/// (`activity-key-invalid`) and the app's token update checks (`live-activity-key-invalid`) each say a flaw in their
/// own words.
public enum ActivityKey {
    /// The longest key, in bytes (printable ASCII: one byte a character).
    public static let maximumLength = 200

    /// What is wrong with a key.
    public enum Flaw: Sendable, Hashable {
        /// The key is empty.
        case empty
        /// The key is longer than ``ActivityKey/maximumLength`` (its length in UTF-8 bytes).
        case tooLong(bytes: Int)
        /// The byte at `byteOffset` (from 0, in UTF-8) is not printable ASCII: a control character, DEL, or part of
        /// a non-ASCII character.
        case notPrintable(byteOffset: Int)
    }

    /// What is wrong with `key` (the first flaw, in this order: empty, too long, not printable); nil for a valid key.
    public static func flaw(_ key: String) -> Flaw? {
        let bytes = key.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > maximumLength { return .tooLong(bytes: bytes.count) }
        if let bad = bytes.firstIndex(where: { $0 < 0x20 || $0 > 0x7E }) {
            return .notPrintable(byteOffset: bytes.distance(from: bytes.startIndex, to: bad))
        }
        return nil
    }
}
