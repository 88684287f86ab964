public import KKPushCore

// `kkpush audit`'s JSON, as values: one finding (a JSON-lines line) and the tally's summary (the last line's
// counters). Their coding keys are the field names scripts read; a value that is unknown is written as null, never
// left out.

extension FleetAuditFinding: Encodable {
    enum CodingKeys: String, CodingKey {
        case finding, severity, tenant, message, fix
        case deviceID = "device_id"
        case hardwareIdentifier = "hardware_identifier"
        case tokenPrefix = "token_prefix"
    }

    /// `{"finding", "severity", "tenant", "device_id", "hardware_identifier", "token_prefix" (null without a token),
    /// "message", "fix"}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(code, forKey: .finding)
        try c.encode(severity.rawValue, forKey: .severity)
        try c.encode(tenant, forKey: .tenant)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(hardwareIdentifier, forKey: .hardwareIdentifier)
        try c.encode(tokenPrefix, forKey: .tokenPrefix)
        try c.encode(message, forKey: .message)
        try c.encode(fix, forKey: .fix)
    }
}

extension FleetAuditTally {
    /// The tally's counters as `audit` reports them (``summary(settings:)``): `scanned`, `active`, `revoked`,
    /// `with_token`, `distinct_tokens`, `errors`, `warnings`, `by_finding` {code: {severity, count, meaning}},
    /// `by_tenant` {tenant: {enrollments, findings {code: count}}}, `routing` [{token_environment, token_evidence
    /// (proved, signed, inferred or null), push_environment, decided_by, enrollments, misrouted}]
    /// (``FleetAuditTally/effectiveRouting``: the probe's answers win), `settings` {APNS_FORCE_ENV, APNS_ENV}.
    public struct Summary: Encodable, Sendable, Hashable {
        /// One code's findings: `{severity, count, meaning}` (the catalog's severity and meaning).
        public struct FindingCount: Encodable, Sendable, Hashable {
            public var severity: Severity
            public var count: Int
            public var meaning: String

            enum CodingKeys: String, CodingKey { case severity, count, meaning }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(severity.rawValue, forKey: .severity)
                try c.encode(count, forKey: .count)
                try c.encode(meaning, forKey: .meaning)
            }
        }

        /// One tenant's counts: `{enrollments, findings {code: count}}`.
        public struct Tenant: Encodable, Sendable, Hashable {
            public var enrollments: Int
            public var findings: [String: Int]

            enum CodingKeys: String, CodingKey { case enrollments, findings }
        }

        /// One routing group: `{token_environment, token_evidence, push_environment, decided_by, enrollments,
        /// misrouted}` (the token's environment and its evidence null when the build does not tell).
        public struct Routing: Encodable, Sendable, Hashable {
            public var group: RoutingGroup
            public var enrollments: Int

            enum CodingKeys: String, CodingKey {
                case enrollments, misrouted
                case tokenEnvironment = "token_environment"
                case tokenEvidence = "token_evidence"
                case pushEnvironment = "push_environment"
                case decidedBy = "decided_by"
            }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(group.tokenEnvironment?.rawValue, forKey: .tokenEnvironment)
                try c.encode(group.tokenEvidence?.rawValue, forKey: .tokenEvidence)
                try c.encode(group.pushEnvironment.rawValue, forKey: .pushEnvironment)
                try c.encode(group.decidedBy.rawValue, forKey: .decidedBy)
                try c.encode(enrollments, forKey: .enrollments)
                try c.encode(group.misrouted, forKey: .misrouted)
            }
        }

        /// The server's overrides as the audit used them: `{APNS_FORCE_ENV, APNS_ENV}`, null when unset (the keys
        /// are the variables' names, ``ServerAPNsSettings/forceVariable`` and ``ServerAPNsSettings/legacyVariable``).
        public struct Settings: Encodable, Sendable, Hashable {
            public var forceEnv: String?
            public var legacyAPNSEnv: String?

            enum CodingKeys: String, CodingKey {
                case forceEnv = "APNS_FORCE_ENV"
                case legacyAPNSEnv = "APNS_ENV"
            }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(forceEnv, forKey: .forceEnv)
                try c.encode(legacyAPNSEnv, forKey: .legacyAPNSEnv)
            }
        }

        public var scanned: Int
        public var active: Int
        public var revoked: Int
        public var withToken: Int
        public var distinctTokens: Int
        public var errors: Int
        public var warnings: Int
        /// By code.
        public var byFinding: [String: FindingCount]
        /// By tenant.
        public var byTenant: [String: Tenant]
        /// Most enrollments first (``FleetAuditTally/routingByCount``).
        public var routing: [Routing]
        public var settings: Settings

        enum CodingKeys: String, CodingKey {
            case scanned, active, revoked, errors, warnings, routing, settings
            case withToken = "with_token"
            case distinctTokens = "distinct_tokens"
            case byFinding = "by_finding"
            case byTenant = "by_tenant"
        }
    }

    /// The counters as ``Summary`` (the audit's summary line), with the server's `settings`.
    public func summary(settings: ServerAPNsSettings) -> Summary {
        var byFinding: [String: Summary.FindingCount] = [:]
        for (code, count) in byCode {
            byFinding["\(code)"] = Summary.FindingCount(
                severity: Self.severity(code), count: count, meaning: FleetAuditCatalog.entry(code)?.meaning ?? "")
        }
        var tenants: [String: Summary.Tenant] = [:]
        for (tenant, c) in byTenant {
            tenants[tenant] = Summary.Tenant(
                enrollments: c.enrollments,
                findings: Dictionary(c.findings.map { ("\($0.key)", $0.value) }, uniquingKeysWith: +))
        }
        return Summary(
            scanned: scanned, active: active, revoked: revoked, withToken: withToken, distinctTokens: distinctTokens,
            errors: errorCount, warnings: warningCount, byFinding: byFinding, byTenant: tenants,
            routing: routingByCount.map { Summary.Routing(group: $0.group, enrollments: $0.count) },
            settings: Summary.Settings(forceEnv: settings.forceEnv, legacyAPNSEnv: settings.legacyAPNSEnv))
    }
}
