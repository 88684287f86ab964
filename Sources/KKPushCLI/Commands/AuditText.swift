import Foundation
import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushDiagnosis
import KantineKoning

/// The audit's text: the summary, the credentials' coverage and what the probe did.
extension AuditSummary: CommandReport {
    package var textLines: [String] {
        var lines = AuditText.render(
            tally, settings: settings, store: store, seconds: seconds, tenant: tenant, examples: examples)
        if let credentials {
            let total = credentials.total
            let grouped = AuditText.grouped
            lines.append(
                "Credentials \(credentials.file): \(grouped(total)) enrollment\(total == 1 ? "" : "s") with a device token no credential of the file may serve for \(credentials.topic) (sandbox \(grouped(credentials.unservable[.sandbox] ?? 0)), production \(grouped(credentials.unservable[.production] ?? 0)))."
            )
        }
        if let probe {
            lines.append(
                "Probed \(AuditText.grouped(probe.probed)) tokens in both environments (at most \(InputNumbers.text(probe.maxRate))/s)\(probe.reused > 0 ? "; \(AuditText.grouped(probe.reused)) answers reused from \(probe.state ?? "--state")" : "")."
            )
        }
        return lines
    }
}

/// The text report.
enum AuditText {
    /// `1234567` → `1,234,567`.
    static func grouped(_ n: Int) -> String {
        let digits = String(abs(n))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    static func padLeft(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }

    /// The most tenants listed in the text table (`--json` has all).
    static let tenantRows = 40

    static func render(
        _ t: FleetAuditTally, settings: ServerAPNsSettings, store: String, seconds: Double, tenant: String?,
        examples: Int
    ) -> [String] {
        var lines: [String] = []
        let scope = tenant.map { " of tenant \($0)" } ?? ""
        lines.append(
            "Audited \(grouped(t.scanned)) enrollments\(scope) in \(store) (\(grouped(t.active)) active, \(grouped(t.revoked)) revoked; \(grouped(t.withToken)) active with a token, \(grouped(t.distinctTokens)) distinct tokens) in \(String(format: "%.1f", seconds)) s."
        )
        let force = settings.forceEnv.map { "APNS_FORCE_ENV=\"\($0)\"" } ?? "APNS_FORCE_ENV unset"
        let legacy = settings.legacyAPNSEnv.map { "APNS_ENV=\"\($0)\"" } ?? "APNS_ENV unset"
        lines.append("Server settings: \(force), \(legacy).")
        lines.append("")
        if t.byCode.isEmpty {
            lines.append("No findings.")
        } else {
            lines.append(
                "\(pad("severity", 9)) \(pad("finding", 33)) \(padLeft("count", 9))  meaning")
            for code in t.codesFound {
                lines.append(
                    "\(pad(FleetAuditTally.severity(code).rawValue, 9)) \(pad(code, 33)) \(padLeft(grouped(t.byCode[code] ?? 0), 9))  \(FlagWords.common.apply(FleetAuditCatalog.entry(code)?.meaning ?? ""))"
                )
            }
            lines.append(
                "\(grouped(t.errorCount)) error and \(grouped(t.warningCount)) warning findings (one per enrollment and code)."
            )
        }
        lines.append("")
        lines.append("By tenant:")
        lines.append(
            "\(pad("tenant", 24)) \(padLeft("enrollments", 11)) \(padLeft("errors", 8)) \(padLeft("warnings", 8))  findings"
        )
        let tenants = t.byTenant.sorted {
            let a = $0.value.findings.values.reduce(0, +)
            let b = $1.value.findings.values.reduce(0, +)
            return a != b ? a > b : $0.key < $1.key
        }
        for (slug, c) in tenants.prefix(tenantRows) {
            let errors = c.findings.filter { FleetAuditTally.severity($0.key) == .error }.values.reduce(0, +)
            let warnings = c.findings.filter { FleetAuditTally.severity($0.key) == .warning }.values.reduce(0, +)
            let codes = c.findings.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map {
                "\($0.key) \(grouped($0.value))"
            }
            lines.append(
                "\(pad(slug, 24)) \(padLeft(grouped(c.enrollments), 11)) \(padLeft(grouped(errors), 8)) \(padLeft(grouped(warnings), 8))  \(codes.joined(separator: ", "))"
            )
        }
        if tenants.count > tenantRows {
            lines.append("… \(tenants.count - tenantRows) more tenants (--json lists all).")
        }
        lines.append("")
        lines.append("Where the server sends active enrollments with a token (\(force), \(legacy)):")
        lines.append(
            "\(pad("tokens", 21)) \(pad("pushed to", 11)) \(pad("decided by", 18)) \(padLeft("enrollments", 11))")
        for (g, n) in t.routingByCount {
            let token = EnvironmentModel.label(g.tokenEnvironment, g.tokenEvidence)
            let misrouted =
                !g.misrouted
                ? ""
                : g.tokenEvidence == .inferred
                    ? "  MISROUTED if build_environment is right: BadDeviceToken" : "  MISROUTED: BadDeviceToken"
            lines.append(
                "\(pad(token, 21)) \(pad(g.pushEnvironment.rawValue, 11)) \(pad(g.decidedBy.rawValue, 18)) \(padLeft(grouped(n), 11))\(misrouted)"
            )
        }
        lines.append(
            "Token environments are proved (by --probe: APNs knows the token there), signed (aps_environment, from the embedded profile) or inferred (build_environment: a claim; the signature decides). A proved one replaces the inference."
        )
        if examples > 0, !t.byCode.isEmpty {
            lines.append("")
            lines.append("Affected enrollments (the first \(examples) of each finding; --json lists all):")
            for code in t.codesFound {
                let count = t.byCode[code] ?? 0
                lines.append("\(FleetAuditTally.severity(code).rawValue) \(code) (\(grouped(count))):")
                // Sorted: with --probe, answers (and so the examples kept) arrive in no fixed order.
                for f in (t.examples[code] ?? []).sorted(by: { ($0.tenant, $0.deviceID) < ($1.tenant, $1.deviceID) }) {
                    lines.append("  \(FlagWords.common.apply(f.message))")
                }
                if let fix = t.examples[code]?.first?.fix { lines.append("  fix: \(FlagWords.common.apply(fix))") }
            }
        }
        return lines
    }
}
