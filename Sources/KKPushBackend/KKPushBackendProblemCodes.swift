public import KKPushCore

// The problem codes KKPushBackend reports, one per line, each with the modules that report or match it: `kkpush … --json`
// prints them as {"code": …}. A code is declared once, in the lowest module that names it (KKPushCore's, and
// those of modules that do not depend on each other, in `Problem+Codes.swift`).

extension Problem.Code {
    /// `dienst-ends-before-start` (KKPushBackend)
    public static let dienstEndsBeforeStart = Self(rawValue: "dienst-ends-before-start")
    /// `email-invalid` (KKPushBackend)
    public static let emailInvalid = Self(rawValue: "email-invalid")
    /// `email-without-manager` (KKPushBackend)
    public static let emailWithoutManager = Self(rawValue: "email-without-manager")
    /// `empty-field` (KKPushBackend)
    public static let emptyField = Self(rawValue: "empty-field")
    /// `enrollment-lookup-failed` (KKPushBackend)
    public static let enrollmentLookupFailed = Self(rawValue: "enrollment-lookup-failed")
    /// `enrollment-not-found` (KKPushBackend)
    public static let enrollmentNotFound = Self(rawValue: "enrollment-not-found")
    /// `identifier-invalid` (KKPushBackend)
    public static let identifierInvalid = Self(rawValue: "identifier-invalid")
    /// `invalid-end-time` (KKPushBackend): a dienst's end_time that is not an ISO 8601 date.
    public static let invalidEndTime = Self(rawValue: "invalid-end-time")
    /// `invalid-role` (KKPushBackend)
    public static let invalidRole = Self(rawValue: "invalid-role")
    /// `invalid-start-time` (KKPushBackend): a dienst's start_time that is not an ISO 8601 date.
    public static let invalidStartTime = Self(rawValue: "invalid-start-time")
    /// `jwt-expired` (KKPushBackend)
    public static let jwtExpired = Self(rawValue: "jwt-expired")
    /// `jwt-malformed` (KKPushBackend)
    public static let jwtMalformed = Self(rawValue: "jwt-malformed")
    /// `jwt-unverified` (KKPushBackend)
    public static let jwtUnverified = Self(rawValue: "jwt-unverified")
    /// `manager-without-email` (KKPushBackend)
    public static let managerWithoutEmail = Self(rawValue: "manager-without-email")
    /// `team-code-repeated` (KKPushBackend)
    public static let teamCodeRepeated = Self(rawValue: "team-code-repeated")
    /// `too-many-teams` (KKPushBackend)
    public static let tooManyTeams = Self(rawValue: "too-many-teams")
    /// `volunteer-duplicate` (KKPushBackend)
    public static let volunteerDuplicate = Self(rawValue: "volunteer-duplicate")
    /// `volunteer-name-empty` (KKPushBackend)
    public static let volunteerNameEmpty = Self(rawValue: "volunteer-name-empty")
    /// `volunteer-name-too-long` (KKPushBackend)
    public static let volunteerNameTooLong = Self(rawValue: "volunteer-name-too-long")
}
