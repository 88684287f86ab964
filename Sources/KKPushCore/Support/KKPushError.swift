/// The error kkpush throws: a stable code, a message that names what is wrong, and what to do.
///
/// Codes are strings so that new ones never break callers (as swift-nio's `FileSystemError`).
public struct KKPushError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A stable, machine-readable code, for example `key-not-p256`.
    public var code: String
    /// What went wrong, naming the input at fault.
    public var message: String
    /// What to do about it, if known.
    public var fix: String?
    /// A description of the underlying cause (an OpenSSL or libcurl error), if any.
    public var underlying: String?

    /// Creates an error.
    public init(code: String, message: String, fix: String? = nil, underlying: String? = nil) {
        self.code = code
        self.message = message
        self.fix = fix
        self.underlying = underlying
    }

    /// The message, the cause and the fix on one line each.
    public var description: String {
        var text = message
        if let underlying { text += " (\(underlying))" }
        if let fix { text += "\nFix: \(fix)" }
        return text
    }
}
