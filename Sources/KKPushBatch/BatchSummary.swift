import KKPushCore

/// What a batch came to: its counts (``BatchLedger/Counts``) and how long it took. `send-batch` says it on stderr
/// in its own words when the batch ends; as a value it has stable field names too.
package struct BatchSummary: Encodable, Sendable {
    package var counts: BatchLedger.Counts
    package var elapsed: Duration

    package init(counts: BatchLedger.Counts, elapsed: Duration) {
        self.counts = counts
        self.elapsed = elapsed
    }

    /// The elapsed time in seconds, and pushes a second over it (0 for no time).
    package var seconds: Double { elapsed.seconds }
    package var perSecond: Double { seconds > 0 ? Double(counts.total) / seconds : 0 }

    /// `rejected` and `failed` by reason, `skipped` by earlier outcome, sorted most first (then by name).
    package static func byCount(_ counts: [String: Int]) -> [(key: String, value: Int)] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

    enum CodingKeys: String, CodingKey {
        case pushes, seconds, accepted, rejected, failed, skipped, blank, broadcasts
        case perSecond = "per_second"
        case otherShard = "other_shard"
        case environmentOverrides = "environment_overrides"
        case unservedEnvironment = "unserved_environment"
        case credentialScope = "credential_scope"
        case possiblyDuplicated = "possibly_duplicated"
        case repeatedIdempotencyKeys = "repeated_idempotency_keys"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(counts.total, forKey: .pushes)
        try c.encode(seconds, forKey: .seconds)
        try c.encode(perSecond, forKey: .perSecond)
        try c.encode(counts.accepted, forKey: .accepted)
        try c.encode(counts.rejected, forKey: .rejected)
        try c.encode(counts.failed, forKey: .failed)
        try c.encode(counts.skipped, forKey: .skipped)
        try c.encode(counts.blank, forKey: .blank)
        try c.encode(counts.otherShard, forKey: .otherShard)
        try c.encode(counts.broadcasts, forKey: .broadcasts)
        try c.encode(counts.environmentOverrides, forKey: .environmentOverrides)
        try c.encode(counts.unservedEnvironment, forKey: .unservedEnvironment)
        try c.encode(counts.credentialScope, forKey: .credentialScope)
        try c.encode(counts.duplicated, forKey: .possiblyDuplicated)
        try c.encode(counts.repeatedKeys, forKey: .repeatedIdempotencyKeys)
    }
}
