public import KKPushCore

// `token verify`'s report is the verdict itself (``TokenUpdateRules/check(body:context:)``, the simulated backend's
// verifier): its JSON and the lines before its problems are here; a command line prints the problems in its own words
// (a problem may name an input, which it names as its flag).

extension TokenUpdateReport: Encodable {
    enum CodingKeys: String, CodingKey {
        case valid, problems
        case resolvedEnvironment = "resolved_environment"
        case decidedBy = "decided_by"
    }

    /// `{"valid", "resolved_environment", "decided_by", "problems": [{severity, code, message, fix}]}`:
    /// `resolved_environment` and `decided_by` are null when the body is not a JSON object.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(valid, forKey: .valid)
        try c.encode(resolvedEnvironment?.rawValue, forKey: .resolvedEnvironment)
        try c.encode(resolution?.decidedBy.rawValue, forKey: .decidedBy)
        try c.encode(problems, forKey: .problems)
    }

    /// The verdict (valid or not, with the counts), the environment the backend resolves and the rule that decided,
    /// and the update's fields (its token by prefix only): the lines before the problems.
    public var summaryLines: [String] {
        let errors = problems.errors.count
        let warnings = problems.warnings.count
        var lines = [
            "token update: \(valid ? "valid" : "INVALID") (\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s"))"
        ]
        if let resolution {
            let detail = resolution.steps.last?.detail ?? ""
            lines.append(
                "  the backend resolves: \(resolution.environment) (\(resolution.environment.host)), decided by \(resolution.decidedBy.rawValue): \(detail)"
            )
        } else {
            lines.append("  the backend resolves: nothing (the body is not a JSON object)")
        }
        if let update {
            lines.append(
                "  token \(DeviceToken.redacted(update.token)), build_environment \"\(update.buildEnvironment)\"\(update.apsEnvironment.map { ", aps_environment \"\($0)\"" } ?? ""), app_version \"\(update.appVersion)\""
            )
            if let live = update.liveActivity {
                let nulls = live.pushToStartTokens.filter { $0.token == nil }.count
                lines.append(
                    "  live_activity: \(live.pushToStartTokens.count) push-to-start token(s) (\(nulls) null: kept, not stored), \(live.activityTokens.count) activity token(s), \(live.activityStates.count) activity state(s)"
                )
            }
        }
        return lines
    }
}
