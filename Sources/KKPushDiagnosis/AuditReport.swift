package import KKPushCore
package import KantineKoning

/// One line of `audit`'s JSON-lines output: one finding about one enrollment, `{"finding", "severity", "tenant",
/// "device_id", "hardware_identifier", "token_prefix" (null without a token), "message", "fix"}`.
package struct AuditFindingLine: Encodable, Sendable {
    package var finding: FleetAuditFinding

    package init(_ finding: FleetAuditFinding) { self.finding = finding }

    enum CodingKeys: String, CodingKey {
        case finding, severity, tenant, message, fix
        case deviceID = "device_id"
        case hardwareIdentifier = "hardware_identifier"
        case tokenPrefix = "token_prefix"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(finding.code, forKey: .finding)
        try c.encode(finding.severity.rawValue, forKey: .severity)
        try c.encode(finding.tenant, forKey: .tenant)
        try c.encode(finding.deviceID, forKey: .deviceID)
        try c.encode(finding.hardwareIdentifier, forKey: .hardwareIdentifier)
        try c.encode(finding.tokenPrefix, forKey: .tokenPrefix)
        try c.encode(finding.message, forKey: .message)
        try c.encode(finding.fix, forKey: .fix)
    }
}

/// What an audit found over the whole store, after its passes: the tally (``FleetAuditTally/summaryJSON(settings:extra:)``
/// is its JSON), where it was read and how long it took, what the probe did and what the credentials file cannot
/// serve.
package struct AuditSummary: Encodable, Sendable {
    /// `--probe`: the tokens probed, the answers reused from the state file, the rate.
    package struct Probe: Encodable, Sendable {
        package var probed: Int
        package var reused: Int
        package var maxRate: Double
        /// The state file, if any.
        package var state: String?

        package init(probed: Int, reused: Int, maxRate: Double, state: String?) {
            self.probed = probed
            self.reused = reused
            self.maxRate = maxRate
            self.state = state
        }

        enum CodingKeys: String, CodingKey {
            case probed, reused, state
            case maxRate = "max_rate"
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(probed, forKey: .probed)
            try c.encode(reused, forKey: .reused)
            try c.encode(maxRate, forKey: .maxRate)
            try c.encode(state, forKey: .state)
        }
    }

    /// A credentials file's coverage: the enrollments with a token that no credential of it may serve for `topic`.
    package struct Credentials: Encodable, Sendable {
        package var file: String
        package var topic: String
        package var unservable: [APNsEnvironment: Int]

        package init(file: String, topic: String, unservable: [APNsEnvironment: Int]) {
            self.file = file
            self.topic = topic
            self.unservable = unservable
        }

        package var total: Int { unservable.values.reduce(0, +) }

        enum CodingKeys: String, CodingKey {
            case file, topic, unservable
            case unservableSandbox = "unservable_sandbox"
            case unservableProduction = "unservable_production"
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(file, forKey: .file)
            try c.encode(topic, forKey: .topic)
            try c.encode(total, forKey: .unservable)
            try c.encode(unservable[.sandbox] ?? 0, forKey: .unservableSandbox)
            try c.encode(unservable[.production] ?? 0, forKey: .unservableProduction)
        }
    }

    package var tally: FleetAuditTally
    package var settings: ServerAPNsSettings
    /// The store as shown (a URL without its password).
    package var store: String
    package var seconds: Double
    /// `--tenant`, for the text's scope.
    package var tenant: String?
    /// How many findings of each code the text shows.
    package var examples: Int
    package var probe: Probe?
    package var credentials: Credentials?

    package init(
        tally: FleetAuditTally, settings: ServerAPNsSettings, store: String, seconds: Double, tenant: String?,
        examples: Int, probe: Probe? = nil, credentials: Credentials? = nil
    ) {
        self.tally = tally
        self.settings = settings
        self.store = store
        self.seconds = seconds
        self.tenant = tenant
        self.examples = examples
        self.probe = probe
        self.credentials = credentials
    }

    /// A member of the tally's summary object.
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// `{"summary", ...}`'s object: the tally's summary (``FleetAuditTally/summaryJSON(settings:extra:)``, the one
    /// schema of the counters), then `store`, `seconds` (to the millisecond), `probe` and `credentials` when they
    /// were asked for.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        if case .object(let members) = tally.summaryJSON(settings: settings) {
            for (name, value) in members { try c.encode(value, forKey: Key(name)) }
        }
        try c.encode(store, forKey: Key("store"))
        try c.encode((seconds * 1000).rounded() / 1000, forKey: Key("seconds"))
        try c.encodeIfPresent(probe, forKey: Key("probe"))
        try c.encodeIfPresent(credentials, forKey: Key("credentials"))
    }
}

/// The last line of `audit`'s JSON-lines output: `{"summary": {...}}` (``AuditSummary``).
package struct AuditSummaryLine: Encodable, Sendable {
    package var summary: AuditSummary
    package init(_ summary: AuditSummary) { self.summary = summary }
}
