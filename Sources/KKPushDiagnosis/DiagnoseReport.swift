import KKPushCore
package import KantineKoning

/// What `diagnose` reports: one diagnosis per enrollment judged (one without an enrollment), and the enrollment
/// reconciliation's findings over all of them.
///
/// Its JSON (the stable field names scripts read): the diagnosis as `verdict` ({code, message, fix, why} or null),
/// `findings` ([{severity, code, message, fix, why, confirmed}]), `push_environment`, `token_environment` (null when
/// unknown), `blocks_delivery` and `inconclusive`; with several enrollments these are the first blocking one's (else
/// the first's) and `enrollments` holds each, with its `enrollment` label; `reconciliation` ([finding]) when there is
/// any.
package struct DiagnoseReport: Sendable, Encodable {
    /// One enrollment's diagnosis.
    package struct Entry: Sendable {
        /// `tenant/device_id (role)` when several enrollments are judged; nil for the only one.
        package var label: String?
        package var diagnosis: Diagnosis
        package init(label: String?, diagnosis: Diagnosis) {
            self.label = label
            self.diagnosis = diagnosis
        }
    }

    /// At least one.
    package var entries: [Entry]
    package var reconciliation: [Finding]

    package init(entries: [Entry], reconciliation: [Finding] = []) {
        self.entries = entries
        self.reconciliation = reconciliation
    }

    /// An enrollment as a diagnosis is labelled: `tenant/device_id (role)`.
    package static func label(of e: Enrollment) -> String { "\(e.tenantSlug)/\(e.deviceID) (\(e.role.rawValue))" }

    /// Whether any diagnosis has a verdict (the exit status 1).
    package var hasVerdict: Bool { entries.contains { $0.diagnosis.hasVerdict } }

    /// The diagnosis at the top of the JSON: the first with a verdict, else the first.
    package var headline: Diagnosis? {
        (entries.count == 1 ? entries.first : entries.first { $0.diagnosis.hasVerdict } ?? entries.first)?.diagnosis
    }

    /// The same report with every text of its findings passed through `words` (a command line's flags for the
    /// libraries' `(apiName)` placeholders).
    package func mapping(_ words: (Finding) -> Finding) -> DiagnoseReport {
        var out = self
        for i in out.entries.indices {
            out.entries[i].diagnosis.findings = out.entries[i].diagnosis.findings.map(words)
            out.entries[i].diagnosis.verdict = out.entries[i].diagnosis.verdict.map(words)
        }
        out.reconciliation = out.reconciliation.map(words)
        return out
    }

    enum CodingKeys: String, CodingKey {
        case verdict, findings, reconciliation, enrollments, enrollment, inconclusive
        case pushEnvironment = "push_environment"
        case tokenEnvironment = "token_environment"
        case blocksDelivery = "blocks_delivery"
    }

    /// A verdict as JSON: a finding without its severity (always an error) and `confirmed`.
    struct VerdictJSON: Encodable {
        var finding: Finding
        enum CodingKeys: String, CodingKey { case code, message, fix, why }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(finding.code, forKey: .code)
            try c.encode(finding.message, forKey: .message)
            try c.encode(finding.fix, forKey: .fix)
            try c.encode(finding.why, forKey: .why)
        }
    }

    /// One enrollment's entry in `enrollments`.
    struct EntryJSON: Encodable {
        var entry: Entry
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try DiagnoseReport.encode(entry.diagnosis, into: &c)
            try c.encode(entry.label ?? "", forKey: .enrollment)
        }
    }

    static func encode(_ d: Diagnosis, into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        try c.encode(d.verdict.map(VerdictJSON.init), forKey: .verdict)
        // A finding as its own Codable encodes it: severity, code, message, why, fix, confirmed.
        try c.encode(d.findings, forKey: .findings)
        try c.encode(d.pushEnvironment?.rawValue, forKey: .pushEnvironment)
        try c.encode(d.tokenEnvironment?.rawValue, forKey: .tokenEnvironment)
        try c.encode(d.blocksDelivery, forKey: .blocksDelivery)
        try c.encode(d.inconclusive, forKey: .inconclusive)
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let headline { try Self.encode(headline, into: &c) }
        if entries.count > 1 { try c.encode(entries.map(EntryJSON.init), forKey: .enrollments) }
        if !reconciliation.isEmpty { try c.encode(reconciliation, forKey: .reconciliation) }
    }
}
