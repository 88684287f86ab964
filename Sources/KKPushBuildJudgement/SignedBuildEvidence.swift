package import KKPushBuild
package import KantineKoning

extension DiagnosisFacts.SignedBuild {
    /// What a signed build's report says the phone's tokens are for, as `diagnose` weighs it. `source` names where
    /// the build came from (a path, as the caller spells it); the report adds how its aps-environment was read.
    ///
    /// A build signed without aps-environment is readable evidence (the verdict build-aps-missing), not an unusable
    /// input; an entitlements file is a request, which is never taken for a signature (``isRequest``).
    package init(report: BuildReport, source: String) {
        self.init(
            apsEnvironment: report.apsEnvironment,
            distribution: report.distribution.flatMap(BuildPushJudgement.appDistribution),
            source: "\(source): \(report.apsEnvironmentSource ?? "signed without aps-environment")",
            problems: report.problems,
            label: report.distribution == .appStore ? "an App Store Connect build (TestFlight or the App Store)" : nil,
            bundleID: report.signedBundleID, isRequest: report.kind == .entitlements)
    }
}
