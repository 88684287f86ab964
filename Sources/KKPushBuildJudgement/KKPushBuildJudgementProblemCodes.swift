public import KKPushCore

// The problem codes KKPushBuildJudgement reports, one per line, each with the modules that report or match it: `kkpush … --json`
// prints them as {"code": …}. A code is declared once, in the lowest module that names it (KKPushCore's, and
// those of modules that do not depend on each other, in `Problem+Codes.swift`).

extension Problem.Code {
    /// `build-no-aps-environment` (KKPushBuildJudgement): the verdict when the build has no aps-environment.
    public static let buildNoApsEnvironment = Self(rawValue: "build-no-aps-environment")
    /// `ok` (KKPushBuildJudgement): the verdict when nothing is wrong (``BuildPushJudgement/Verdict/isOK``).
    public static let ok = Self(rawValue: "ok")
    /// `build-configuration-dependent` (KKPushBuildJudgement)
    public static let buildConfigurationDependent = Self(rawValue: "build-configuration-dependent")
}
