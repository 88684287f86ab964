/// The error kkpush throws: a stable code, a message that names what is wrong, and what to do. Thrown when an
/// operation cannot go on; a rule's result that the operation reports and goes past is a ``Problem``.
///
/// The codes a caller can match are listed as static members of ``Code`` (`KKPushError+Codes.swift`), so that
/// `error.code == .fileMissing` is checked by the compiler; a code is still a string underneath, so new codes never
/// break callers that print or log them (as swift-nio's `FileSystemError`).
public struct KKPushError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A stable, machine-readable error code, for example `key-not-p256` (``Code/keyNotP256``).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringInterpolation
    {
        /// The code as printed and in JSON (`{"error": {"code": …}}`).
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public init(stringInterpolation: DefaultStringInterpolation) {
            self.rawValue = String(stringInterpolation: stringInterpolation)
        }
        public var description: String { rawValue }
    }

    /// A cause known only as text (an OpenSSL error queue, a libcurl code), for ``underlying``.
    public struct Cause: Error, Sendable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// A stable, machine-readable code.
    public var code: Code
    /// What went wrong, naming the input at fault.
    public var message: String
    /// What to do about it, if known.
    public var fix: String?
    /// The error that caused this one (a system, OpenSSL, libcurl or decoding error), kept whole.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(code: Code, message: String, fix: String? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.fix = fix
        self.underlying = underlying
    }

    /// The underlying cause as text, if any.
    public var underlyingDescription: String? { underlying.map { String(describing: $0) } }

    /// The message, the cause and the fix on one line each.
    public var description: String {
        var text = message
        if let underlyingDescription { text += " (\(underlyingDescription))" }
        if let fix { text += "\nFix: \(fix)" }
        return text
    }

    public static func == (a: KKPushError, b: KKPushError) -> Bool {
        a.code == b.code && a.message == b.message && a.fix == b.fix
            && a.underlyingDescription == b.underlyingDescription
    }
}

extension KKPushError.Code: Codable {
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
