import Foundation
public import KKPushCore

/// The rules `kkpush audit` applies to one enrollment: those `diagnose` applies to an enrollment without a
/// probe (the same ``Diagnoser`` rules and codes), plus `revoked-with-token`.
///
/// - A revoked enrollment is judged only for the token it still holds (`revoked-with-token`): the backend
///   sends it nothing, so its routing does not matter.
/// - An active enrollment without a token is `token-missing`, and nothing more (its build_environment comes
///   with the token update, so it is absent for the same reason).
/// - An active enrollment with a token: `token-format`, then the routing rules of ``Diagnoser`` (what the
///   backend's resolution does with its build_environment, aps_environment and is_test_user under the
///   server's settings): `server-env-override`, `test-user-production-build` (diagnose's
///   `environment-mismatch` decided by is_test_user), `environment-mismatch`, and the judgement of the value
///   (`build-environment-unknown`, `-testing`, `-missing`, `-nonstandard`, `-not-normalized`). The server's
///   settings alone (an override that agrees with the build, a value the server ignores) are not a finding of
///   each enrollment: the summary's routing table says what they do to each group.
///
/// The routing verdict depends only on (build_environment, aps_environment, is_test_user), so it is computed
/// once per combination (a bounded cache), and a fleet of a million rows costs a million dictionary lookups.
public struct FleetAuditRowRules: Sendable {
    /// The server's APNS_FORCE_ENV / APNS_ENV.
    public let settings: ServerAPNsSettings

    /// Where the backend sends one kind of enrollment, and what diagnose says about it.
    public struct Routing: Sendable {
        /// The environment the build's tokens belong to (aps_environment, else build_environment; nil: cannot tell).
        public var tokenEnvironment: APNsEnvironment?
        /// How ``tokenEnvironment`` is known: `signed` from aps_environment, `inferred` from build_environment (a
        /// claim); nil when it is not known. `audit --probe` replaces it with what APNs proves.
        public var tokenEvidence: EnvironmentModel.Evidence?
        /// Where the backend sends its pushes.
        public var pushEnvironment: APNsEnvironment
        /// The rule that decided.
        public var decidedBy: ResolutionRule
        /// Diagnose's routing findings (messages without the enrollment's name).
        public var findings: [Finding]
    }

    struct Key: Hashable {
        var build: String?
        var aps: String?
        var testUser: Bool
    }

    private var cache: [Key: Routing] = [:]
    /// The most combinations kept (a hostile table of distinct values is judged row by row beyond it).
    public static let cacheLimit = 4096

    /// Diagnose's codes that describe the enrollment's routing (the others describe the server or inputs the
    /// audit does not have).
    static let routingCodes: Set<String> = [
        FleetAuditCode.serverEnvOverride, FleetAuditCode.environmentMismatch, FleetAuditCode.buildEnvironmentUnknown,
        FleetAuditCode.buildEnvironmentTesting, FleetAuditCode.buildEnvironmentMissing,
        FleetAuditCode.buildEnvironmentNonstandard, FleetAuditCode.buildEnvironmentNotNormalized,
    ]

    /// A well-formed token for the template enrollment the routing is judged on.
    static let templateToken = String(repeating: "0", count: 64)

    public init(settings: ServerAPNsSettings) { self.settings = settings }

    /// The routing of `e` (cached by build_environment, aps_environment and is_test_user).
    public mutating func routing(for e: Enrollment) -> Routing {
        let key = Key(build: e.buildEnvironment, aps: e.apsEnvironment, testUser: e.isTestUser)
        if let hit = cache[key] { return hit }
        let computed = Self.computeRouting(e, settings: settings)
        if cache.count < Self.cacheLimit { cache[key] = computed }
        return computed
    }

    static func computeRouting(_ e: Enrollment, settings: ServerAPNsSettings) -> Routing {
        var template = e
        template.apnsToken = templateToken
        template.status = .active
        var facts = DiagnosisFacts(now: e.updatedAt)
        facts.enrollment = template
        facts.settings = settings
        let diagnosis = Diagnoser.diagnose(facts)
        let resolution = EnvironmentResolver.resolve(
            buildEnvironment: e.buildEnvironment, apsEnvironment: e.apsEnvironment, isTestUser: e.isTestUser,
            settings: settings)
        var findings: [Finding] = []
        for f in diagnosis.findings where routingCodes.contains(f.code.rawValue) {
            // An override that agrees with the build is the server's setting, not this enrollment's problem.
            if f.code == .serverEnvOverride, f.severity != .error { continue }
            var f = f
            if f.code == .environmentMismatch, resolution.decidedBy == .testUser {
                f.code = DiagnosisCode(.testUserProductionBuild)
            }
            findings.append(f)
        }
        let signed = e.apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:)) != nil
        return Routing(
            tokenEnvironment: resolution.deviceEnvironment,
            tokenEvidence: resolution.deviceEnvironment == nil ? nil : signed ? .signed : .inferred,
            pushEnvironment: resolution.environment, decidedBy: resolution.decidedBy, findings: findings)
    }

    /// True if `token` is lowercase hex of an even length between 64 and 400 characters (as diagnose's
    /// `DeviceToken.normalize` would leave it unchanged), checked without allocating.
    static func isCleanToken(_ token: String) -> Bool {
        let count = token.utf8.count
        guard count >= DeviceToken.minimumHexLength, count <= DeviceToken.maximumHexLength, count % 2 == 0 else {
            return false
        }
        return token.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// `tenant/device_id` for messages.
    static func name(_ e: Enrollment) -> String { "\(e.tenantSlug)/\(e.deviceID)" }

    /// Every finding about `e` on its own.
    public mutating func findings(for e: Enrollment) -> [FleetAuditFinding] {
        if e.status == .revoked {
            guard let token = e.apnsToken else { return [] }
            return [
                FleetAuditFinding(
                    code: FleetAuditCode.revokedWithToken, severity: .warning, enrollment: e,
                    message:
                        "\(Self.name(e)) is revoked but still holds the APNs token \(DeviceToken.redacted(token)) (hardware \(e.hardwareIdentifier)).",
                    fix:
                        "Clear apns_token when an enrollment is revoked (UPDATE device_enrollments SET apns_token = NULL WHERE status = 'revoked'): a revoked record keeps a phone's address for nothing, and a later re-activation would push to a stale token."
                )
            ]
        }
        guard let token = e.apnsToken else {
            return [
                FleetAuditFinding(
                    code: FleetAuditCode.tokenMissing, severity: .error, enrollment: e,
                    message: "\(Self.name(e)) is active but has no apns_token (hardware \(e.hardwareIdentifier)).",
                    fix:
                        "Open the app so it sends its token update (check notification permission); re-enroll if it stays empty."
                )
            ]
        }
        var out: [FleetAuditFinding] = []
        if !Self.isCleanToken(token) {
            // The one judgement of a token (DeviceToken.judge), as diagnose, send and the mock apply it.
            let judged = DeviceToken.judge(token)
            switch judged.form {
            case .clean: break
            case .uppercase:
                out.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tokenUppercase, severity: .warning, enrollment: e,
                        message:
                            "\(Self.name(e))'s apns_token \(DeviceToken.redacted(token)): \(DeviceToken.uppercaseProblem.message)",
                        fix: DeviceToken.uppercaseProblem.fix))
            case .decorated, .unusable:
                let unusable = judged.form == .unusable
                out.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tokenFormat, severity: .error, enrollment: e,
                        message:
                            "\(Self.name(e))'s apns_token \(DeviceToken.redacted(token)) is \(unusable ? "not a usable APNs token" : "not plain hex") (\(judged.problems.map(\.code.rawValue).joined(separator: ", "))).",
                        fix: unusable
                            ? "Re-enroll the device so the app sends its current token as lowercase hex of the raw bytes."
                            : "Store the token as plain lowercase hex (the backend puts it into /3/device/<token> as stored)."
                    ))
            }
        }
        for f in routing(for: e).findings {
            out.append(
                FleetAuditFinding(
                    code: f.code.rawValue, severity: f.severity, enrollment: e,
                    message: "\(Self.name(e)): \(f.message)",
                    fix: f.fix))
        }
        return out
    }
}

/// The active enrollments holding one APNs token, read from a stream ordered by apns_token: one group in
/// memory at a time, judged when the token changes.
public struct TokenGroupAccumulator: Sendable {
    private var group = KeyedGroup()
    /// The most enrollments of one group kept (the rest are counted, not reported one by one).
    public var memberLimit: Int {
        get { group.memberLimit }
        set { group.memberLimit = newValue }
    }

    public init() {}

    /// Adds `e` (ignored unless active with a token); returns the findings of the group it closes, if any.
    public mutating func add(_ e: Enrollment) -> [FleetAuditFinding] {
        guard e.status == .active, let t = e.apnsToken else { return [] }
        return group.add(e, key: t).map(Self.judge) ?? []
    }

    /// Judges the open group and empties it.
    public mutating func finish() -> [FleetAuditFinding] { group.close().map(Self.judge) ?? [] }

    private static func judge(_ closed: KeyedGroup.Closed) -> [FleetAuditFinding] {
        let (token, members, overflow) = (closed.key, closed.members, closed.overflow)
        guard members.count > 1 else { return [] }
        var hardware: [String] = []
        for m in members where !hardware.contains(m.hardwareIdentifier.lowercased()) {
            hardware.append(m.hardwareIdentifier.lowercased())
        }
        guard hardware.count > 1 else { return [] }
        let tenants = Set(members.map(\.tenantSlug)).sorted()
        let total = members.count + overflow
        return members.map { e in
            let others = members.filter {
                $0.hardwareIdentifier.lowercased() != e.hardwareIdentifier.lowercased()
            }
            let shown = others.prefix(3).map { "\($0.tenantSlug)/\($0.deviceID) on \($0.hardwareIdentifier)" }
            return FleetAuditFinding(
                code: FleetAuditCode.tokenShared, severity: .error, enrollment: e,
                message:
                    "\(FleetAuditRowRules.name(e)) (hardware \(e.hardwareIdentifier)) holds the APNs token \(DeviceToken.redacted(token)), which \(total) active enrollments on \(hardware.count) hardware identifiers hold (tenants: \(tenants.joined(separator: ", "))); others: \(shown.joined(separator: "; "))\(others.count > 3 ? "; …" : "").",
                fix:
                    "A token belongs to one app install on one phone: pushes for the other hardware identifiers' enrollments reach this phone. Revoke the enrollments of the phone that no longer holds the token (the older ones; its enrollment sync with superseded_device_tokens does it), or have that phone send its token update again."
            )
        }
    }
}

/// The enrollments of one hardware identifier (compared without case), read from a stream ordered by
/// hardware_identifier: one group in memory at a time, judged when the identifier changes.
public struct HardwareGroupAccumulator: Sendable {
    private var key: String?
    private var members: [Enrollment] = []
    private var overflow = 0
    /// The most enrollments of one group kept.
    public var memberLimit = 10_000
    /// The app's limit of teams per phone.
    public static let teamLimit = 5

    public init() {}

    /// Adds `e` (only active enrollments take part); returns the findings of the group it closes, if any.
    public mutating func add(_ e: Enrollment) -> [FleetAuditFinding] {
        let k = e.hardwareIdentifier.lowercased()
        var out: [FleetAuditFinding] = []
        if k != key { out = finish() }
        key = k
        guard e.status == .active else { return out }
        if members.count < memberLimit { members.append(e) } else { overflow += 1 }
        return out
    }

    /// Judges the open group and empties it.
    public mutating func finish() -> [FleetAuditFinding] {
        defer {
            members.removeAll(keepingCapacity: true)
            key = nil
            overflow = 0
        }
        guard members.count > 1 else { return [] }
        var out: [FleetAuditFinding] = []
        // Build environments, of the enrollments whose token update reported one.
        let reporting = members.filter { $0.apnsToken != nil && $0.buildEnvironment != nil }
        var values: [String] = []
        for m in reporting where !values.contains(m.buildEnvironment!) { values.append(m.buildEnvironment!) }
        if values.count > 1 {
            for e in reporting {
                let others = reporting.filter { $0.buildEnvironment != e.buildEnvironment }.prefix(3).map {
                    "\(FleetAuditRowRules.name($0)) \"\($0.buildEnvironment!)\""
                }
                out.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.buildEnvironmentDisagree, severity: .warning, enrollment: e,
                        message:
                            "\(FleetAuditRowRules.name(e)) reports build_environment \"\(e.buildEnvironment!)\", but other active enrollments of hardware \(e.hardwareIdentifier) report \(values.filter { $0 != e.buildEnvironment }.map { "\"\($0)\"" }.joined(separator: ", ")) (\(others.joined(separator: "; "))).",
                        fix:
                            "One phone runs one build: the enrollments with the older build_environment were not updated after a build switch (TestFlight ↔ App Store, Xcode ↔ TestFlight). The phone's next token update for each tenant fixes them; until then they are routed by a stale value. Enrollment reconciliation revokes those it no longer has."
                    ))
            }
        }
        // Teams, across tenants (the app allows 5 in all).
        var teams: Set<String> = []
        for m in members { for t in m.teamCodes { teams.insert("\(m.tenantSlug)\u{1F}\(t)") } }
        if teams.count > Self.teamLimit {
            let byTenant = Dictionary(grouping: members, by: \.tenantSlug).sorted { $0.key < $1.key }.map {
                "\($0.key): \(Set($0.value.flatMap(\.teamCodes)).sorted().joined(separator: ", "))"
            }
            for e in members {
                out.append(
                    FleetAuditFinding(
                        code: FleetAuditCode.tooManyTeams, severity: .warning, enrollment: e,
                        message:
                            "Hardware \(e.hardwareIdentifier) (\(FleetAuditRowRules.name(e)) and \(members.count + overflow - 1) more active enrollments) follows \(teams.count) teams, more than the app's \(Self.teamLimit): \(byTenant.joined(separator: "; ")).",
                        fix:
                            "The app allows \(Self.teamLimit) teams in all: these are stale enrollments (an old identifierForVendor, a removed team) the app's enrollment sync has not revoked. Revoke the ones the phone no longer shows."
                    ))
            }
        }
        return out
    }
}

/// The rows one lookup of the backend's troubleshooting finds (README of the app: `Repo.get_by(DeviceEnrollment,
/// team_manager_email: …)`; by token alike), read from a stream ordered by that key (without case for the e-mail):
/// one group in memory at a time. `get_by` must find exactly the row it means: with several rows of one tenant it
/// raises `Ecto.MultipleResultsError` (any status), and an e-mail stored in another case is missed by the exact
/// text. Rows of different tenants are not a finding: one phone holds one token for every tenant it is enrolled
/// in, and a lookup for a tenant's problem names the tenant.
public struct LookupGroupAccumulator: Sendable {
    /// The key looked up.
    public enum Kind: Sendable {
        case teamManagerEmail
        case apnsToken
    }

    public let kind: Kind
    private var group = KeyedGroup()

    public init(kind: Kind) { self.kind = kind }

    /// Adds `e` (ignored without the key); returns the findings of the group it closes, if any.
    public mutating func add(_ e: Enrollment) -> [FleetAuditFinding] {
        let value = kind == .teamManagerEmail ? e.teamManagerEmail?.lowercased() : e.apnsToken
        guard let value else { return [] }
        return group.add(e, key: value).map(judge) ?? []
    }

    /// Judges the open group and empties it.
    public mutating func finish() -> [FleetAuditFinding] { group.close().map(judge) ?? [] }

    /// A closed group's findings: its rows of each tenant that has more than one.
    private func judge(_ closed: KeyedGroup.Closed) -> [FleetAuditFinding] {
        var out: [FleetAuditFinding] = []
        for tenant in Set(closed.members.map(\.tenantSlug)).sorted() {
            let rows = closed.members.filter { $0.tenantSlug == tenant }
            if rows.count > 1 { out += judge(rows, tenant: tenant) }
        }
        return out
    }

    /// The findings of `members`, rows of one tenant sharing the key.
    private func judge(_ members: [Enrollment], tenant: String) -> [FleetAuditFinding] {
        let total = members.count
        let scope = "in tenant \(tenant)"
        switch kind {
        case .apnsToken:
            // Active holders on several phones are token-shared already (an error that says more).
            let phones = Set(members.filter { $0.status == .active }.map { $0.hardwareIdentifier.lowercased() })
            if phones.count > 1 { return [] }
            return members.map { e in
                let others = members.filter { $0 != e }.prefix(3).map {
                    "\(FleetAuditRowRules.name($0)) (\($0.role.rawValue), \($0.status.rawValue))"
                }
                return FleetAuditFinding(
                    code: FleetAuditCode.tokenLookupAmbiguous, severity: .warning, enrollment: e,
                    message:
                        "\(FleetAuditRowRules.name(e)) holds the APNs token \(Redaction.prefix(e.apnsToken ?? "")), as \(total) rows do \(scope) (others: \(others.joined(separator: "; "))\(total > 4 ? "; …" : "")): Repo.get_by(DeviceEnrollment, apns_token: …) raises Ecto.MultipleResultsError.",
                    fix:
                        "Look the token up with Repo.all(from d in DeviceEnrollment, where: d.apns_token == ^token) (or add tenant_slug and role to get_by); revoked rows should not keep the token (clear it on revoke)."
                )
            }
        case .teamManagerEmail:
            let spellings = Set(members.compactMap(\.teamManagerEmail))
            return members.map { e in
                let email = e.teamManagerEmail ?? ""
                let exact = members.filter { $0.teamManagerEmail == email }.count
                let others = members.filter { $0 != e }.prefix(3).map {
                    "\(FleetAuditRowRules.name($0)) (\($0.role.rawValue), \($0.status.rawValue)\($0.teamManagerEmail == email ? "" : ", stored as \($0.teamManagerEmail ?? "")"))"
                }
                let consequence =
                    exact > 1
                    ? "Repo.get_by(DeviceEnrollment, team_manager_email: \"\(email)\") raises Ecto.MultipleResultsError (\(exact) rows match it exactly)"
                    : "Repo.get_by(DeviceEnrollment, team_manager_email: \"\(email)\") finds only this row, and the same address typed in another case finds another row or none"
                return FleetAuditFinding(
                    code: FleetAuditCode.emailLookupAmbiguous, severity: .warning, enrollment: e,
                    message:
                        "\(FleetAuditRowRules.name(e)) has team_manager_email \(email), one of \(total) rows \(scope) with this address\(spellings.count > 1 ? " (spelt \(spellings.count) ways)" : "") (others: \(others.joined(separator: "; "))\(total > 4 ? "; …" : "")): \(consequence).",
                    fix:
                        "Look the manager up with Repo.all(from d in DeviceEnrollment, where: fragment(\"lower(?)\", d.team_manager_email) == ^String.downcase(email)) and pick by tenant_slug and device_id; store e-mails in one case (lowercase) so the exact lookup finds them."
                )
            }
        }
    }
}

/// Enrollments read in the order of a key, one key's group at a time (at most ``memberLimit`` kept, the rest
/// counted): what every accumulator of the audit holds.
struct KeyedGroup: Sendable {
    /// A group a new key (or the end) closed.
    struct Closed {
        var key: String
        var members: [Enrollment]
        var overflow: Int
    }

    private var key: String?
    private var members: [Enrollment] = []
    private var overflow = 0
    /// The most enrollments of one group kept.
    var memberLimit = 10_000

    /// Adds `e` under `key`; returns the group it closes (another key's), if any.
    mutating func add(_ e: Enrollment, key k: String) -> Closed? {
        let closed = k != key ? close() : nil
        key = k
        if members.count < memberLimit { members.append(e) } else { overflow += 1 }
        return closed
    }

    /// The open group, emptied; nil if there is none.
    mutating func close() -> Closed? {
        defer {
            members.removeAll(keepingCapacity: true)
            key = nil
            overflow = 0
        }
        guard let key, !members.isEmpty else { return nil }
        return Closed(key: key, members: members, overflow: overflow)
    }
}
