/// How serious a ``Problem`` is.
public enum Severity: String, Sendable, Codable, Comparable, CaseIterable {
    /// Informational: nothing is wrong, but worth knowing.
    case info
    /// Delivery will probably work, but something is off.
    case warning
    /// Delivery fails (APNs rejects it, or the app cannot act on it).
    case error

    private var rank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .error: 2
        }
    }

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// One result of a rule about a request or a payload: what is wrong, how bad it is, and how to fix it. A check
/// reports its problems and goes on; an operation that cannot go on throws a ``KKPushError`` instead.
///
/// Codes are stable: APNs reason names (`BadDeviceToken`) where APNs would answer with one,
/// otherwise kebab-case codes of kkpush's own (`background-with-alert`).
public struct Problem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A stable, machine-readable problem code, for example `background-with-alert` (``Code/backgroundWithAlert``)
    /// or `BadDeviceToken` (``Code/badDeviceToken``).
    ///
    /// Each code is declared once, as a static member, in the module that reports it (`Problem+Codes.swift` in
    /// KKPushCore, `<Module>ProblemCodes.swift` elsewhere), so that `problem.code == .badDeviceToken` is checked by
    /// the compiler. Not `ExpressibleByStringLiteral`, on purpose: a misspelt code is a compile error, never a new
    /// code. A code is still a string underneath: it prints and encodes as that string alone, so text and JSON
    /// output read as before.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The code as printed and in JSON.
        public let rawValue: String
        /// A code from its string: a code read back (a peer's JSON), or a declaration (`Self(rawValue: "x")`).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code of a rule that predicts APNs's answer: the reason APNs would give, spelt as APNs spells it.
        public init(_ reason: APNsReason) { self.rawValue = reason.rawValue }
        /// The code of a ``KKPushError`` reported as a problem and gone past (the error's code string).
        public init(_ error: KKPushError.Code) { self.rawValue = error.rawValue }
        public init(from decoder: any Decoder) throws {
            self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }
    }

    /// How serious it is.
    public var severity: Severity
    /// A stable, machine-readable code.
    public var code: Code
    /// What was seen, naming the field at fault.
    public var message: String
    /// What to do about it.
    public var fix: String

    /// Creates a problem.
    public init(_ severity: Severity, code: Code, message: String, fix: String) {
        self.severity = severity
        self.code = code
        self.message = message
        self.fix = fix
    }

    /// One line: `error BadPriority: ... (fix: ...)`.
    public var description: String { "\(severity.rawValue) \(code): \(message) Fix: \(fix)" }
}

extension Array where Element == Problem {
    /// True if any problem is an error.
    public var hasErrors: Bool { contains { $0.severity == .error } }
    /// The problems that are errors.
    public var errors: [Problem] { filter { $0.severity == .error } }
    /// The problems that are warnings.
    public var warnings: [Problem] { filter { $0.severity == .warning } }
}
