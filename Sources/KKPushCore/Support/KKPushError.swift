/// The error kkpush throws: a stable code, a message that names what is wrong, and what to do. Thrown when an
/// operation cannot go on; a rule's result that the operation reports and goes past is a ``Problem``.
///
/// The codes a caller can match are listed as static members of ``Code`` (`KKPushError+Codes.swift`), so that
/// `error.code == .fileMissing` is checked by the compiler; a code is still a string underneath, so new codes never
/// break callers that print or log them (as swift-nio's `FileSystemError`).
public struct KKPushError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure an error is, whatever its code: the one thing a command line needs to pick its exit
    /// status (`kkpush`'s table: usage 64, input 2, verdict and failed 1, unavailable 69, refused 77, output 74).
    /// Each declared ``Code`` carries its kind, so a new code never changes an exit status by its spelling.
    public enum Kind: String, Sendable, Hashable, CaseIterable, Codable {
        /// The caller asked for something that cannot be done as asked: a value out of range, a bad combination,
        /// a malformed argument.
        case usage
        /// An input the caller named cannot be used: a file missing, unreadable or malformed (a key, a
        /// certificate, JSON); a database that is there but not usable as given; a value a store does not have.
        case input
        /// The operation ran and its answer is no: a push rejected, a check that found a problem.
        case verdict
        /// The operation could not be completed (a library call failed, a peer answered with an error).
        case failed
        /// A service needed is not there: a port taken, a host or database unreachable, no TLS handshake.
        case unavailable
        /// A peer refused the caller: a database's user or password, a privilege, an admin API's token.
        case refused
        /// An output could not be written.
        case output
    }

    /// A stable, machine-readable error code, for example `key-not-p256` (``Code/keyNotP256``), and its ``Kind``.
    ///
    /// Two codes are equal when their strings are: the kind is what the code's declaration says it is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as printed and in JSON (`{"error": {"code": …}}`).
        public var rawValue: String
        /// What kind of failure it is, as the code's declaration says.
        public var kind: Kind
        /// A code read back from its string alone (a peer's JSON error): its kind is not known, so it is taken as
        /// `failed`, the operation could not be completed.
        public init(rawValue: String) {
            self.rawValue = rawValue
            self.kind = .failed
        }
        /// A code and its kind, as each module declares its codes (`<Module>ErrorCodes.swift`).
        public init(_ rawValue: String, kind: Kind) {
            self.rawValue = rawValue
            self.kind = kind
        }
        public var description: String { rawValue }
        public static func == (a: Code, b: Code) -> Bool { a.rawValue == b.rawValue }
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
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
    /// A code read back from JSON: its string alone (``init(rawValue:)``).
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
