import Foundation
public import KKPushCore

/// Counters of one audit: small maps (by code, by tenant, by routing group) and a few examples per code,
/// never the table.
public struct FleetAuditTally: Sendable {
    /// Enrollments in scope (every row of the store, or of `--tenant`).
    public var scanned = 0
    public var active = 0
    public var revoked = 0
    /// Active enrollments holding a token.
    public var withToken = 0
    /// Distinct tokens of active enrollments (in scope).
    public var distinctTokens = 0
    /// Findings by code.
    public var byCode: [String: Int] = [:]
    /// Per tenant: enrollments scanned and findings by code.
    public var byTenant: [String: TenantCounts] = [:]
    /// The first findings of each code.
    public var examples: [String: [FleetAuditFinding]] = [:]
    /// How many examples of each code are kept.
    public var exampleLimit: Int
    /// Active enrollments with a token, by where their tokens belong and where the server sends them, as the
    /// enrollments' own fields tell (aps_environment: signed; build_environment: inferred).
    public var routing: [RoutingGroup: Int] = [:]
    /// `--probe`: enrollments whose token's environment the probe proved, by the group the fields put them in...
    public var probeReplaced: [RoutingGroup: Int] = [:]
    /// ... and by the group the probe proves (evidence `proved`).
    public var probeProved: [RoutingGroup: Int] = [:]

    /// The routing groups as reported: the probe's answer wins over what the fields inferred (an enrollment the
    /// probe proved leaves its inferred group for a proved one).
    public var effectiveRouting: [RoutingGroup: Int] {
        var out = routing
        for (group, n) in probeReplaced {
            let left = (out[group] ?? 0) - n
            out[group] = left > 0 ? left : nil
        }
        for (group, n) in probeProved { out[group, default: 0] += n }
        return out
    }

    /// One tenant's counts.
    public struct TenantCounts: Sendable, Hashable {
        public var enrollments = 0
        public var findings: [String: Int] = [:]
    }

    /// A routing group: the token's environment (nil: the build does not tell) and how it is known, the push's,
    /// the deciding rule.
    public struct RoutingGroup: Sendable, Hashable {
        public var tokenEnvironment: APNsEnvironment?
        public var pushEnvironment: APNsEnvironment
        public var decidedBy: ResolutionRule
        /// `proved` (the probe), `signed` (aps_environment) or `inferred` (build_environment, a claim).
        public var tokenEvidence: EnvironmentModel.Evidence?

        public init(
            tokenEnvironment: APNsEnvironment?, pushEnvironment: APNsEnvironment, decidedBy: ResolutionRule,
            tokenEvidence: EnvironmentModel.Evidence? = nil
        ) {
            self.tokenEnvironment = tokenEnvironment
            self.pushEnvironment = pushEnvironment
            self.decidedBy = decidedBy
            self.tokenEvidence = tokenEnvironment == nil ? nil : tokenEvidence
        }
        /// True if the pushes go to the other environment than the tokens'.
        public var misrouted: Bool { tokenEnvironment.map { $0 != pushEnvironment } ?? false }
    }

    public init(exampleLimit: Int = 5) { self.exampleLimit = exampleLimit }

    /// ``routing`` by enrollments, most first; ties by token environment, push environment and rule, so that the
    /// same store always gives the same order.
    public var routingByCount: [(group: RoutingGroup, count: Int)] {
        effectiveRouting.map { (group: $0.key, count: $0.value) }.sorted {
            if $0.count != $1.count { return $0.count > $1.count }
            let a = [
                $0.group.tokenEnvironment?.rawValue ?? "~", $0.group.pushEnvironment.rawValue,
                $0.group.decidedBy.rawValue,
            ]
            let b = [
                $1.group.tokenEnvironment?.rawValue ?? "~", $1.group.pushEnvironment.rawValue,
                $1.group.decidedBy.rawValue,
            ]
            return a.lexicographicallyPrecedes(b)
        }
    }

    /// Counts one finding.
    public mutating func record(_ f: FleetAuditFinding) {
        byCode[f.code, default: 0] += 1
        byTenant[f.tenant, default: TenantCounts()].findings[f.code, default: 0] += 1
        if examples[f.code, default: []].count < exampleLimit { examples[f.code, default: []].append(f) }
    }

    /// The severity of `code` (the catalog's).
    public static func severity(_ code: String) -> Severity { FleetAuditCatalog.entry(code)?.severity ?? .warning }

    /// Codes found, most severe first, in the catalog's order.
    public var codesFound: [String] {
        let known = FleetAuditCatalog.codes.filter { byCode[$0] != nil }
        return known + byCode.keys.filter { !known.contains($0) }.sorted()
    }

    public var errorCount: Int { byCode.filter { Self.severity($0.key) == .error }.values.reduce(0, +) }
    public var warningCount: Int { byCode.filter { Self.severity($0.key) == .warning }.values.reduce(0, +) }
    /// True if any error-level finding was reported (the exit status 1).
    public var hasErrors: Bool { errorCount > 0 }
}

/// One audit of a fleet in two sorted passes, holding one group at a time:
///
/// 1. every enrollment ordered by apns_token: ``tokenPass(_:)`` (a token on several hardware identifiers);
/// 2. every enrollment ordered by hardware_identifier: ``hardwarePass(_:)`` (the rules of one enrollment,
///    build environments that disagree on one phone, more than 5 teams on one phone, the counters).
///
/// Call ``finishTokenPass()`` and ``finishHardwarePass()`` after each pass. Each call returns the findings
/// it reports (after the `tenant` and `codes` filters), already counted in ``tally``.
public struct FleetAudit: Sendable {
    public let settings: ServerAPNsSettings
    /// Only findings about this tenant's enrollments are reported (the other tenants' rows are still read:
    /// a token or a phone shared with another tenant is a finding about both).
    public let tenant: String?
    /// Only these codes are reported (nil: all).
    public let codes: Set<String>?
    public private(set) var tally: FleetAuditTally
    /// Every tenant with a row in the store, whatever `tenant` is (so that a tenant with no rows can be told
    /// from a tenant without findings, with the nearest known ones): one entry per tenant, never per row.
    public private(set) var tenantsSeen: Set<String> = []
    private var rows: FleetAuditRowRules
    private var tokens = TokenGroupAccumulator()
    private var tokenLookups = LookupGroupAccumulator(kind: .apnsToken)
    private var emailLookups = LookupGroupAccumulator(kind: .teamManagerEmail)
    private var hardware = HardwareGroupAccumulator()
    private var lastToken: String?

    public init(settings: ServerAPNsSettings, tenant: String? = nil, codes: Set<String>? = nil, exampleLimit: Int = 5) {
        self.settings = settings
        self.tenant = tenant
        self.codes = codes
        self.tally = FleetAuditTally(exampleLimit: exampleLimit)
        self.rows = FleetAuditRowRules(settings: settings)
    }

    /// Whether a finding is reported (the filters), counting it if so.
    public mutating func accept(_ findings: [FleetAuditFinding]) -> [FleetAuditFinding] {
        guard !findings.isEmpty else { return findings }
        let kept = findings.filter { f in
            (tenant == nil || f.tenant == tenant) && (codes == nil || codes!.contains(f.code))
        }
        for f in kept { tally.record(f) }
        return kept
    }

    func inScope(_ e: Enrollment) -> Bool { tenant == nil || e.tenantSlug == tenant }

    /// `--probe` proved where one enrollment's token belongs: it leaves the group its fields put it in for the
    /// proved one (``FleetAuditTally/effectiveRouting``).
    mutating func recordProbe(
        replacing fields: FleetAuditTally.RoutingGroup, with proved: FleetAuditTally.RoutingGroup
    ) {
        tally.probeReplaced[fields, default: 0] += 1
        tally.probeProved[proved, default: 0] += 1
    }

    /// Pass 1, one enrollment (ordered by apns_token).
    public mutating func tokenPass(_ e: Enrollment) -> [FleetAuditFinding] {
        if e.status == .active, let t = e.apnsToken, inScope(e), t != lastToken {
            tally.distinctTokens += 1
            lastToken = t
        }
        return accept(tokens.add(e) + tokenLookups.add(e))
    }

    public mutating func finishTokenPass() -> [FleetAuditFinding] { accept(tokens.finish() + tokenLookups.finish()) }

    /// Pass 3, one enrollment (ordered by team_manager_email without case): e-mails several rows hold.
    public mutating func emailPass(_ e: Enrollment) -> [FleetAuditFinding] { accept(emailLookups.add(e)) }

    public mutating func finishEmailPass() -> [FleetAuditFinding] { accept(emailLookups.finish()) }

    /// Pass 2, one enrollment (ordered by hardware_identifier).
    public mutating func hardwarePass(_ e: Enrollment) -> [FleetAuditFinding] {
        var found = hardware.add(e)
        tenantsSeen.insert(e.tenantSlug)
        if inScope(e) {
            tally.scanned += 1
            tally.byTenant[e.tenantSlug, default: FleetAuditTally.TenantCounts()].enrollments += 1
            if e.status == .active {
                tally.active += 1
                if e.apnsToken != nil {
                    tally.withToken += 1
                    let r = rows.routing(for: e)
                    let group = FleetAuditTally.RoutingGroup(
                        tokenEnvironment: r.tokenEnvironment, pushEnvironment: r.pushEnvironment,
                        decidedBy: r.decidedBy, tokenEvidence: r.tokenEvidence)
                    tally.routing[group, default: 0] += 1
                }
            } else {
                tally.revoked += 1
            }
            found += rows.findings(for: e)
        }
        return accept(found)
    }

    public mutating func finishHardwarePass() -> [FleetAuditFinding] { accept(hardware.finish()) }

    /// Pass 2, a row that cannot be read as an enrollment: counted as scanned (in scope), and a
    /// ``FleetAuditCode/rowUnreadable`` finding naming it; no other rule sees it.
    public mutating func unreadableRow(_ u: UnreadableEnrollment) -> [FleetAuditFinding] {
        tenantsSeen.insert(u.tenantSlug)
        guard tenant == nil || u.tenantSlug == tenant else { return [] }
        tally.scanned += 1
        tally.byTenant[u.tenantSlug, default: FleetAuditTally.TenantCounts()].enrollments += 1
        return accept([FleetAuditFinding(unreadable: u)])
    }

    /// The whole audit of an array (both passes, sorted here): for tests and small fleets.
    public static func audit(
        _ enrollments: [Enrollment], settings: ServerAPNsSettings = ServerAPNsSettings(), tenant: String? = nil,
        codes: Set<String>? = nil
    ) -> (findings: [FleetAuditFinding], tally: FleetAuditTally) {
        var audit = FleetAudit(settings: settings, tenant: tenant, codes: codes)
        var found: [FleetAuditFinding] = []
        for e in enrollments.sorted(by: { ($0.apnsToken ?? "") < ($1.apnsToken ?? "") }) {
            found += audit.tokenPass(e)
        }
        found += audit.finishTokenPass()
        for e in enrollments.sorted(by: { $0.hardwareIdentifier.lowercased() < $1.hardwareIdentifier.lowercased() }) {
            found += audit.hardwarePass(e)
        }
        found += audit.finishHardwarePass()
        let byEmail = enrollments.sorted {
            ($0.teamManagerEmail?.lowercased() ?? "\u{10FFFF}", $0.deviceID, $0.tenantSlug)
                < ($1.teamManagerEmail?.lowercased() ?? "\u{10FFFF}", $1.deviceID, $1.tenantSlug)
        }
        for e in byEmail { found += audit.emailPass(e) }
        found += audit.finishEmailPass()
        return (found, audit.tally)
    }
}
