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
    /// How serious it is.
    public var severity: Severity
    /// A stable, machine-readable code.
    public var code: String
    /// What was seen, naming the field at fault.
    public var message: String
    /// What to do about it.
    public var fix: String

    /// Creates a problem.
    public init(_ severity: Severity, code: String, message: String, fix: String) {
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
