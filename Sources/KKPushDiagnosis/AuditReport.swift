package import KKPushCore
package import KantineKoning

// One line of `audit`'s JSON-lines output is a `FleetAuditFinding` as it encodes itself (KantineKoning's
// `FleetAuditJSON.swift`); the last line is ``AuditSummaryLine``.

/// What an audit found over the whole store, after its passes: the tally (``FleetAuditTally/Summary`` is its JSON),
/// where it was read and how long it took, what the probe did and what the credentials file cannot serve.
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

    enum CodingKeys: String, CodingKey { case store, seconds, probe, credentials }

    /// `{"summary", ...}`'s object: the tally's summary (``FleetAuditTally/Summary``, the one schema of the
    /// counters), then `store`, `seconds` (to the millisecond), `probe` and `credentials` when they were asked for.
    /// The two are one object: the summary encodes its members first, and this encoder's keyed container at the same
    /// level adds these to them (a keyed container asked for twice at one level is the same object).
    package func encode(to encoder: any Encoder) throws {
        try tally.summary(settings: settings).encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(store, forKey: .store)
        try c.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try c.encodeIfPresent(probe, forKey: .probe)
        try c.encodeIfPresent(credentials, forKey: .credentials)
    }
}

/// The last line of `audit`'s JSON-lines output: `{"summary": {...}}` (``AuditSummary``).
package struct AuditSummaryLine: Encodable, Sendable {
    package var summary: AuditSummary
    package init(_ summary: AuditSummary) { self.summary = summary }
}
