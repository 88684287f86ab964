/// A typed verdict on a request: every problem found, and the answer APNs would give.
///
/// Errors use APNs reason names as codes (`BadPriority`, `PayloadTooLarge`, ...) and are exactly the
/// things APNs rejects; warnings use kebab-case codes (`background-priority-10`, ...) for what APNs
/// accepts but is wrong. ``isValid`` means no errors.
public struct RequestCheck: Sendable, Equatable {
    /// Every problem, in the order the stages found them.
    public var problems: [Problem]
    /// The first error APNs would answer with, in the documented order (``APNsRequestRules``); nil if accepted.
    public var rejection: APNsRejection?

    /// Creates a verdict.
    public init(problems: [Problem] = [], rejection: APNsRejection? = nil) {
        self.problems = problems
        self.rejection = rejection
    }

    /// True when APNs would accept the request (no errors; warnings allowed).
    public var isValid: Bool { !problems.hasErrors }

    /// The errors.
    public var errors: [Problem] { problems.errors }

    /// The warnings.
    public var warnings: [Problem] { problems.warnings }

    /// Adds a problem; an error with an APNs reason becomes the rejection if there is none yet.
    public mutating func add(_ problem: Problem) {
        problems.append(problem)
        if rejection == nil, problem.severity == .error {
            let reason = APNsReason(problem.code.rawValue)
            rejection = APNsRejection(status: reason.isKnown ? reason.status : 400, reason: reason)
        }
    }

    /// Adds the problems and the rejection of `other` after this one's (the first rejection wins).
    public mutating func append(_ other: RequestCheck) {
        problems += other.problems
        if rejection == nil { rejection = other.rejection }
    }

    /// This verdict followed by `other`.
    public func appending(_ other: RequestCheck) -> RequestCheck {
        var copy = self
        copy.append(other)
        return copy
    }
}

/// The answer APNs gives to a rejected request: the HTTP status and the reason.
public struct APNsRejection: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status, for example 400.
    public var status: Int
    /// The reason in the JSON body.
    public var reason: APNsReason

    /// Creates a rejection.
    public init(status: Int, reason: APNsReason) {
        self.status = status
        self.reason = reason
    }

    /// A rejection with the reason's documented status.
    public init(_ reason: APNsReason) {
        self.init(status: reason.status, reason: reason)
    }

    /// `400 BadPriority`.
    public var description: String { "\(status) \(reason.rawValue)" }
}

/// How a provider authenticates to APNs, as the topic rules need it.
public enum AuthenticationKind: Sendable, Equatable {
    /// A provider token (JWT): `apns-topic` is required; every push type is allowed.
    case token
    /// A client certificate covering `topics` (nil when unknown). With one topic, APNs uses it when
    /// `apns-topic` is left out; with several, `apns-topic` is required.
    case certificate(topics: Set<String>?)
}
