import KKPushCLISupport
import KKPushCore
import KKPushDiagnosis
import KantineKoning

/// `kkpush diagnose`'s text: the verdict, the routing and the other findings of each diagnosis, then the enrollment
/// reconciliation's findings. (The JSON is the report's own encoding, ``DiagnoseReport``.)
extension DiagnoseReport: CommandReport {
    package var textLines: [String] {
        var lines: [String] = []
        for entry in entries {
            let d = entry.diagnosis
            if let label = entry.label { lines.append("== \(label)") }
            if let v = d.verdict {
                lines.append(
                    d.inconclusive
                        ? "Verdict: the path could not be checked (\(v.code)): \(v.message)"
                        : "Verdict: \(v.code): \(v.message)")
                lines.append("  why: \(v.why)")
                lines.append("  fix: \(v.fix)")
            } else {
                lines.append("Verdict: nothing found that blocks delivery.")
            }
            let routing = [
                d.pushEnvironment.map { "pushes go to \($0)" }, d.tokenEnvironment.map { "the token is a \($0) token" },
            ]
            .compactMap { $0 }
            if !routing.isEmpty {
                lines.append(
                    "Routing: \(routing.joined(separator: "; "))\(d.inconclusive ? " (unconfirmed: from the configuration)" : "")"
                )
            }
            let rest = d.findings.filter { $0 != d.verdict }
            if !rest.isEmpty {
                lines.append("Findings:")
                for f in rest {
                    let mark = f.confirmed ? " (probe)" : d.inconclusive ? " (unconfirmed: from the configuration)" : ""
                    lines.append("  \(f.severity.rawValue) \(f.code)\(mark): \(f.message)")
                    lines.append("    fix: \(f.fix)")
                }
            }
        }
        for f in reconciliation {
            lines.append("== Enrollment reconciliation")
            lines.append("  \(f.severity.rawValue) \(f.code): \(f.message)")
            lines.append("    why: \(f.why)")
            lines.append("    fix: \(f.fix)")
        }
        return lines
    }
}
