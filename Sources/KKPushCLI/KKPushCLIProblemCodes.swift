public import KKPushCore

// The problem codes KKPushCLI reports, one per line, each with the modules that report or match it: `kkpush … --json`
// prints them as {"code": …}. A code is declared once, in the lowest module that names it (KKPushCore's, and
// those of modules that do not depend on each other, in `Problem+Codes.swift`).

extension Problem.Code {
    /// `credential` (KKPushCLI)
    public static let credential = Self(rawValue: "credential")
    /// `environment-defaulted` (KKPushCLI)
    public static let environmentDefaulted = Self(rawValue: "environment-defaulted")
}
