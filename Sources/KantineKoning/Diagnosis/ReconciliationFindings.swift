import Foundation
import KKPushCore

extension DiagnosisCode {
    /// One manager e-mail (or one team's look-alike phones) has active enrollments on several hardware
    /// identifiers: a new identifierForVendor (TestFlight ↔ App Store) or a second device.
    public static let severalHardwareIdentifiers = Self(rawValue: "several-hardware-identifiers")
}

/// The finding of `kkpush diagnose --email`/`--team`: active enrollments of one person on several hardware
/// identifiers, and what enrollment reconciliation will do with them.
public enum ReconciliationFindings {
    /// What the enrollments were looked up by.
    public enum Scope: Sendable {
        /// A manager's e-mail: every enrollment found is that manager's.
        case email(String)
        /// A team of a tenant: phones of different people follow it too, so only look-alike phones (the same
        /// role, teams and e-mail, one on a development build and one on production, or the same manager
        /// e-mail) are reported.
        case team(tenant: String, team: String)

        var label: String {
            switch self {
            case .email(let e): "manager e-mail \(e)"
            case .team(let tenant, let team): "team \(team) of \(tenant)"
            }
        }
    }

    /// The environment a stored build_environment resolves to by the backend's auto-detection.
    static func environment(_ e: Enrollment) -> String {
        guard let b = e.buildEnvironment else { return "no build_environment" }
        return ["development", "debug"].contains(b.lowercased()) ? "sandbox" : "production"
    }

    static func describe(_ e: Enrollment) -> String {
        "\(e.tenantSlug)/\(e.deviceID) (\(e.role.rawValue) \(e.teamCodes.joined(separator: ", ")); token \(e.apnsToken.map(DeviceToken.redacted) ?? "none"), \(environment(e)); updated \(Diagnoser.iso(e.updatedAt)))"
    }

    /// The findings for `enrollments` (as found by `scope`): none if their active ones are on one hardware
    /// identifier.
    public static func findings(_ enrollments: [Enrollment], scope: Scope) -> [Finding] {
        let active = enrollments.filter { $0.status == .active }
        var groups: [String: [Enrollment]] = [:]
        for e in active { groups[e.hardwareIdentifier.lowercased(), default: []].append(e) }
        guard groups.count > 1 else { return [] }
        var phones = groups.values.map { list in
            list.sorted { ($0.tenantSlug, $0.deviceID) < ($1.tenantSlug, $1.deviceID) }
        }
        // The newest phone first: the one that enrolled (or sent a token) last is most likely the live one.
        func newest(_ list: [Enrollment]) -> Date { list.map(\.updatedAt).max() ?? .distantPast }
        phones.sort { newest($0) > newest($1) }
        if case .team = scope {
            // Keep only phones that look like one person's: the same manager e-mail, or the same role and
            // teams on the other APNs environment (a TestFlight and an App Store build).
            func signature(_ e: Enrollment) -> String { "\(e.role.rawValue)|\(e.teamCodes.sorted())" }
            phones = phones.filter { phone in
                phones.contains { other in
                    other.first?.hardwareIdentifier != phone.first?.hardwareIdentifier
                        && other.contains { o in
                            phone.contains { p in
                                if let mail = p.teamManagerEmail, mail.lowercased() == o.teamManagerEmail?.lowercased()
                                {
                                    return true
                                }
                                return signature(p) == signature(o) && environment(p) != environment(o)
                            }
                        }
                }
            }
            guard phones.count > 1 else { return [] }
        }
        let live = phones[0]
        let liveID = live[0].hardwareIdentifier
        let older = phones.dropFirst()
        let olderText = older.map { list in
            "\(list[0].hardwareIdentifier): \(list.map(describe).joined(separator: "; "))"
        }.joined(separator: " | ")
        let olderCount = older.reduce(0) { $0 + $1.count }
        let environments = Set(phones.flatMap { $0.map(environment) })
        let switchHint =
            environments.isSuperset(of: ["sandbox", "production"])
            ? " One phone is on a sandbox (development) build and another on production: the pattern of a TestFlight ↔ App Store switch, which changes identifierForVendor."
            : ""
        return [
            Finding(
                .warning, DiagnosisCode.severalHardwareIdentifiers,
                message:
                    "The \(scope.label) has active enrollments on \(phones.count) hardware identifiers. Newest: \(liveID): \(live.map(describe).joined(separator: "; ")). Older: \(olderText).\(switchHint)",
                why:
                    "Every dienst change pushes each of these phones' tokens: an older phone the app is no longer on (a new identifierForVendor after a TestFlight ↔ App Store switch, or a reinstall) costs a push per change that reaches nobody, or is answered 410/BadDeviceToken. Enrollment reconciliation (POST /api/mobile/v1/enrollments/sync, on the app's foreground after its tenant info refresh, at most once an hour per hardware identifier) revokes only within the caller's hardware identifier: when the app on \(liveID) syncs, it revokes or trims \(liveID)'s enrollments it no longer lists; the \(olderCount) enrollment(s) on the older identifier(s) are revoked by that sync only if the app sends their JWTs as superseded_device_tokens (it does when its data survived the switch), except in tenants with enrollment_open false or season_ended true, which sync never changes. Otherwise they stay active until an app on that identifier syncs. If an older identifier is another device of the same person (an iPad), reconciliation leaves it alone, as it should.",
                fix:
                    "If the older phone is gone, let the app sync with its superseded JWTs, or revoke its enrollments by hand: "
                    + older.flatMap { $0 }.map { "POST /admin/enrollments/\($0.tenantSlug)/\($0.deviceID)/revoke" }
                    .joined(separator: ", ")
                    + ". If it is a second device, nothing is wrong.")
        ]
    }
}
