import KKPushCore
public import Prometheus

/// The simulated backend's Prometheus metrics, served by its `GET /metrics`: one registry per backend
/// (never the process-wide one), so several backends in one process (tests) each count their own.
///
/// Every metric is defined here. Label values are bounded (results, outcomes, environments, APNs
/// reasons, store operations); never a device token, a JWT or an apns-id.
///
/// | name | type | labels |
/// | --- | --- | --- |
/// | `kkpush_backend_token_updates_total` | counter | `result` (updated, invalid, unauthorized, forbidden, error) |
/// | `kkpush_backend_fanout_pushes_total` | counter | `outcome` (accepted, rejected, failed), `environment`, `reason` |
/// | `kkpush_backend_tokens_cleared_total` | counter | — |
/// | `kkpush_backend_push_duration_seconds` | histogram | `environment` |
/// | `kkpush_backend_store_query_duration_seconds` | histogram | `operation` |
public final class BackendMetrics: Sendable {
    /// The registry `GET /metrics` emits.
    public let registry = PrometheusCollectorRegistry()

    /// `kkpush_backend_<name>[_<unit>]`, with its help text.
    static func metric(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "kkpush", subsystem: "backend", metricName: name, unitName: unit, helpText: help)
    }

    /// `kkpush_backend_token_updates_total`.
    static var tokenUpdatesMetric: MetricNameDescriptor {
        metric(
            "token_updates", unit: "total",
            "Token updates (POST /api/mobile/v1/device/apns-token) by result: updated (200), invalid (422), unauthorized (401), forbidden (403), error."
        )
    }
    /// `kkpush_backend_fanout_pushes_total`.
    static var pushesMetric: MetricNameDescriptor {
        metric(
            "fanout_pushes", unit: "total",
            "Pushes of team fan-outs by outcome, APNs environment and APNs reason (empty unless rejected).")
    }
    /// `kkpush_backend_tokens_cleared_total`.
    static var clearedMetric: MetricNameDescriptor {
        metric(
            "tokens_cleared", unit: "total",
            "Enrollments whose device token was cleared after a 410 answer to a fan-out push.")
    }
    /// `kkpush_backend_push_duration_seconds`.
    static var pushDurationMetric: MetricNameDescriptor {
        metric(
            "push_duration", unit: "seconds", "Time from handing a fan-out push to the APNs client to its outcome.")
    }
    /// `kkpush_backend_store_query_duration_seconds`.
    static var storeMetric: MetricNameDescriptor {
        metric("store_query_duration", unit: "seconds", "Time of the enrollment store's operations, by operation.")
    }

    /// The results of `kkpush_backend_token_updates_total`.
    public static let tokenUpdateResults = ["updated", "invalid", "unauthorized", "forbidden", "error"]
    /// The operations of `kkpush_backend_store_query_duration_seconds`.
    public static let storeOperations = [
        "get", "update_token", "enroll", "revoke", "active_enrollments", "clear_token", "upsert", "existing", "export",
    ]

    static let pushBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10), .seconds(30),
    ]
    static let storeBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
    ]

    private let tokenUpdates: [String: Counter]
    private let pushDurations: [APNsEnvironment: DurationHistogram]
    private let storeDurations: [String: DurationHistogram]
    private let cleared: Counter

    /// A registry with every metric of the backend defined (the fixed series at zero).
    public init() {
        var updates: [String: Counter] = [:]
        for result in Self.tokenUpdateResults {
            updates[result] = registry.makeCounter(
                descriptor: Self.tokenUpdatesMetric, labels: [("result", result)])
        }
        tokenUpdates = updates
        var pushes: [APNsEnvironment: DurationHistogram] = [:]
        for env in [APNsEnvironment.sandbox, .production] {
            pushes[env] = registry.makeDurationHistogram(
                descriptor: Self.pushDurationMetric, labels: [("environment", env.rawValue)], buckets: Self.pushBuckets)
            for outcome in ["accepted", "failed"] {
                _ = registry.makeCounter(
                    descriptor: Self.pushesMetric,
                    labels: [("outcome", outcome), ("environment", env.rawValue), ("reason", "")])
            }
        }
        pushDurations = pushes
        var store: [String: DurationHistogram] = [:]
        for operation in Self.storeOperations {
            store[operation] = registry.makeDurationHistogram(
                descriptor: Self.storeMetric, labels: [("operation", operation)], buckets: Self.storeBuckets)
        }
        storeDurations = store
        cleared = registry.makeCounter(descriptor: Self.clearedMetric)
    }

    /// The text exposition of every metric.
    public func exposition() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(8192)
        registry.emit(into: &out)
        return out
    }

    // MARK: Recording

    /// One token update answered with HTTP `status`.
    func tokenUpdate(status: Int) {
        let result: String
        switch status {
        case 200: result = "updated"
        case 422: result = "invalid"
        case 401: result = "unauthorized"
        case 403: result = "forbidden"
        default: result = "error"
        }
        tokenUpdates[result]?.increment()
    }

    /// One fan-out push's outcome.
    func fanOutPush(_ delivery: PushDelivery, environment: APNsEnvironment) {
        var reason = ""
        if case .rejected(_, let r, _) = delivery { reason = r.rawValue }
        registry.makeCounter(
            descriptor: Self.pushesMetric,
            labels: [("outcome", delivery.label), ("environment", environment.rawValue), ("reason", reason)]
        ).increment()
    }

    /// `count` enrollments had their token cleared after a 410.
    func tokensCleared(_ count: Int) {
        if count > 0 { cleared.increment(by: Int64(count)) }
    }

    /// One fan-out push took `duration` from hand-over to outcome.
    func observePush(environment: APNsEnvironment, _ duration: Duration) {
        pushDurations[environment]?.record(duration)
    }

    /// Runs the store operation `operation` (one of ``storeOperations``) and records how long it took
    /// (also when it throws).
    func timed<T>(_ operation: String, _ body: () async throws -> T) async rethrows -> T {
        let start = ContinuousClock.now
        defer { storeDurations[operation]?.record(ContinuousClock.now - start) }
        return try await body()
    }
}
