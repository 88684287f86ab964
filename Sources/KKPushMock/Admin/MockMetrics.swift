import KKPushCore
public import Prometheus

/// The mock's Prometheus metrics, served by the admin API's `GET /metrics`: one registry per mock
/// (never the process-wide one), so several mocks in one process (tests) each count their own requests.
///
/// Every metric is defined here. Label values are bounded: environments, HTTP statuses, APNs reason
/// strings, fault kinds; never a device token, a provider token or an apns-id.
///
/// | name | type | labels |
/// | --- | --- | --- |
/// | `kkpush_mock_requests_total` | counter | `environment`, `status`, `reason` ("" for 200), `push_type`, `priority` (``PushMetricLabels``) |
/// | `kkpush_mock_request_duration_seconds` | histogram | `environment` |
/// | `kkpush_mock_open_connections` | gauge | `environment` |
/// | `kkpush_mock_open_streams` | gauge | `environment` |
/// | `kkpush_mock_faults_fired_total` | counter | `fault` (respond, delay, goaway, close, reset, stall) |
/// | `kkpush_mock_provider_tokens_total` | counter | `result` (verified, rejected), `reason` ("" for verified) |
/// | `kkpush_mock_broadcast_requests_total` | counter | `environment`, `operation` (broadcast, create, read, delete, list), `status`, `reason` |
/// | `kkpush_mock_broadcast_deliveries_total` | counter | `environment` |
/// | `kkpush_mock_delivery_states_total` | counter | `environment`, `state` (``DeliveryState``), `push_type` |
/// | `kkpush_mock_pushes_held` | gauge | `environment`, `state` (the held states), `push_type` |
///
/// `kkpush_mock_delivery_states_total` counts each accepted push once per state it enters (`received` for every one,
/// then `delivered`, `stored: device offline`, …), as Apple's console counts "Stored - Device Offline" and "Delivered
/// to Device" as separate data points for one push; `kkpush_mock_pushes_held` is how many pushes are held now (stored,
/// held for power, deferred by the background budget).
///
/// Broadcast and channel requests are counted in `kkpush_mock_broadcast_requests_total`, not in
/// `kkpush_mock_requests_total`; each broadcast's copy to a subscribed device enters the delivery log
/// (with its `channel_id`) and `kkpush_mock_broadcast_deliveries_total`.
///
/// `kkpush_mock_requests_total` counts a request once, where its answer is decided (the same place an
/// accepted one enters the delivery log), so `status="200"` agrees exactly with the log's entries for
/// that environment (while the log holds them all: it is a bounded ring, and `POST /reset` empties it,
/// while counters only go up).
public final class MockMetrics: Sendable {
    /// The registry `GET /metrics` emits.
    public let registry = PrometheusCollectorRegistry()

    /// `kkpush_mock_<name>[_<unit>]`, with its help text.
    static func metric(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "kkpush", subsystem: "mock", metricName: name, unitName: unit, helpText: help)
    }

    /// `kkpush_mock_requests_total`.
    static var requests: MetricNameDescriptor {
        metric(
            "requests", unit: "total",
            "APNs requests the mock answered, by listener environment, HTTP status, APNs reason (empty for 200), push type and priority (known values, none or other)."
        )
    }
    /// `kkpush_mock_request_duration_seconds`.
    static var duration: MetricNameDescriptor {
        metric(
            "request_duration", unit: "seconds",
            "Time from a request's HEADERS to its answer handed to the connection (delay faults included).")
    }
    /// `kkpush_mock_open_connections`.
    static var connectionsMetric: MetricNameDescriptor {
        metric("open", unit: "connections", "APNs client connections open now, by listener environment.")
    }
    /// `kkpush_mock_open_streams`.
    static var streamsMetric: MetricNameDescriptor {
        metric("open", unit: "streams", "HTTP/2 streams open now on the APNs listeners, by listener environment.")
    }
    /// `kkpush_mock_faults_fired_total`.
    static var faults: MetricNameDescriptor {
        metric(
            "faults_fired", unit: "total",
            "Injected faults that acted on a request, by kind (a goaway counts when its GOAWAY is sent).")
    }
    /// `kkpush_mock_provider_tokens_total`.
    static var tokens: MetricNameDescriptor {
        metric(
            "provider_tokens", unit: "total",
            "Provider tokens verified in full and taken into use on a connection, and requests whose provider token was refused (by APNs reason)."
        )
    }

    /// `kkpush_mock_delivery_states_total`.
    static var deliveryStates: MetricNameDescriptor {
        metric(
            "delivery_states", unit: "total",
            "Accepted pushes entering each delivery state (received, delivered, stored, discarded, deferred, ...), by environment, state and push type."
        )
    }
    /// `kkpush_mock_pushes_held`.
    static var held: MetricNameDescriptor {
        metric(
            "pushes", unit: "held",
            "Accepted pushes held now: stored for an offline device, held for power, or deferred by the background budget."
        )
    }

    /// The buckets of the request latency histogram (seconds): 100 µs to 10 s.
    static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// The accepted-request counters, pre-made: [environment][push type label][priority label].
    private let accepted: [APNsEnvironment: [[Counter]]]
    private let durations: [APNsEnvironment: DurationHistogram]
    private let connections: [APNsEnvironment: Gauge]
    private let streams: [APNsEnvironment: Gauge]
    private let verified: Counter
    /// The two states every push enters, pre-made: [environment][received, delivered][push type label].
    private let commonStates: [APNsEnvironment: [[Counter]]]

    /// A registry with every metric of the mock defined (the per-environment series at zero).
    public init() {
        var accepted: [APNsEnvironment: [[Counter]]] = [:]
        var durations: [APNsEnvironment: DurationHistogram] = [:]
        var connections: [APNsEnvironment: Gauge] = [:]
        var streams: [APNsEnvironment: Gauge] = [:]
        var commonStates: [APNsEnvironment: [[Counter]]] = [:]
        let registry = self.registry
        for env in [APNsEnvironment.sandbox, .production] {
            let label = [("environment", env.rawValue)]
            accepted[env] = PushMetricLabels.pushTypes.map { type in
                PushMetricLabels.priorities.map { priority in
                    registry.makeCounter(
                        descriptor: Self.requests,
                        labels: label + [
                            ("status", "200"), ("reason", ""), ("push_type", type), ("priority", priority),
                        ])
                }
            }
            durations[env] = registry.makeDurationHistogram(
                descriptor: Self.duration, labels: label, buckets: Self.durationBuckets)
            connections[env] = registry.makeGauge(descriptor: Self.connectionsMetric, labels: label)
            streams[env] = registry.makeGauge(descriptor: Self.streamsMetric, labels: label)
            commonStates[env] = [DeliveryState.received, .delivered].map { state in
                PushMetricLabels.pushTypes.map { type in
                    registry.makeCounter(
                        descriptor: Self.deliveryStates,
                        labels: label + [("state", state.rawValue), ("push_type", type)])
                }
            }
        }
        self.commonStates = commonStates
        self.accepted = accepted
        self.durations = durations
        self.connections = connections
        self.streams = streams
        verified = registry.makeCounter(
            descriptor: Self.tokens, labels: [("result", "verified"), ("reason", "")])
        for kind in ["respond", "delay", "goaway", "close", "reset", "stall", "blackhole"] {
            _ = registry.makeCounter(descriptor: Self.faults, labels: [("fault", kind)])
        }
    }

    /// The text exposition of every metric.
    public func exposition() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(8192)
        registry.emit(into: &out)
        return out
    }

    // MARK: Recording

    /// One answer decided: `status` with `reason` (nil for 200) on `environment`'s listener.
    func countAnswer(
        environment: APNsEnvironment, status: Int, reason: APNsReason?, pushType: String?, priority: String?
    ) {
        let typeIndex = PushMetricLabels.pushTypeIndex(pushType)
        let priorityIndex = PushMetricLabels.priorityIndex(priority)
        if status == 200, reason == nil, let counters = accepted[environment] {
            counters[typeIndex][priorityIndex].increment()
            return
        }
        registry.makeCounter(
            descriptor: Self.requests,
            labels: [
                ("environment", environment.rawValue), ("status", String(status)), ("reason", reason?.rawValue ?? ""),
                ("push_type", PushMetricLabels.pushTypes[typeIndex]),
                ("priority", PushMetricLabels.priorities[priorityIndex]),
            ]
        ).increment()
    }

    /// One answer handed to its connection, `nanoseconds` after the request's HEADERS arrived.
    func observeDuration(environment: APNsEnvironment, nanoseconds: Int64) {
        durations[environment]?.recordNanoseconds(max(0, nanoseconds))
    }

    /// A connection opened (+1) or closed (-1) on `environment`'s listener.
    func connectionOpened(_ environment: APNsEnvironment) { connections[environment]?.increment() }
    func connectionClosed(_ environment: APNsEnvironment) { connections[environment]?.decrement() }

    /// Streams opened (+n) or closed (-n) on `environment`'s listener.
    func streamsChanged(_ environment: APNsEnvironment, by delta: Int) {
        guard delta != 0 else { return }
        if delta > 0 {
            streams[environment]?.increment(by: Double(delta))
        } else {
            streams[environment]?.decrement(by: Double(-delta))
        }
    }

    /// A fault of `kind` (the admin API's name: respond, delay, goaway, close, reset, stall) acted.
    func faultFired(_ kind: String) {
        registry.makeCounter(descriptor: Self.faults, labels: [("fault", kind)]).increment()
    }

    /// One broadcast or channel-management answer.
    func countBroadcastAnswer(environment: APNsEnvironment, operation: String, status: Int, reason: APNsReason?) {
        registry.makeCounter(
            descriptor: Self.metric(
                "broadcast_requests", unit: "total",
                "Broadcast sends and channel-management requests the mock answered, by environment, operation, HTTP status and APNs reason."
            ),
            labels: [
                ("environment", environment.rawValue), ("operation", operation), ("status", String(status)),
                ("reason", reason?.rawValue ?? ""),
            ]
        ).increment()
    }

    /// `count` copies of a broadcast handed to subscribed devices.
    func countBroadcastDeliveries(environment: APNsEnvironment, count: Int) {
        guard count > 0 else { return }
        registry.makeCounter(
            descriptor: Self.metric(
                "broadcast_deliveries", unit: "total",
                "Copies of broadcasts handed to subscribed simulated devices (stored messages to late subscribers included)."
            ),
            labels: [("environment", environment.rawValue)]
        ).increment(by: Int64(count))
    }

    /// `entry` entered its ``DeliveredNotification/state``, leaving `old` (nil: it was just accepted).
    func countDeliveryState(entry: DeliveredNotification, from old: DeliveryState?) {
        let typeIndex = PushMetricLabels.pushTypeIndex(entry.pushType)
        let state = entry.state
        if state == .received || state == .delivered, let counters = commonStates[entry.environment] {
            counters[state == .received ? 0 : 1][typeIndex].increment()
        } else {
            registry.makeCounter(descriptor: Self.deliveryStates, labels: labels(entry, state, typeIndex)).increment()
        }
        if let old, old.isHeld {
            registry.makeGauge(descriptor: Self.held, labels: labels(entry, old, typeIndex)).decrement()
        }
        if state.isHeld {
            registry.makeGauge(descriptor: Self.held, labels: labels(entry, state, typeIndex)).increment()
        }
    }

    /// A held push forgotten (the mock was reset): no longer held.
    func forgetHeld(_ entry: DeliveredNotification) {
        guard entry.state.isHeld else { return }
        let typeIndex = PushMetricLabels.pushTypeIndex(entry.pushType)
        registry.makeGauge(descriptor: Self.held, labels: labels(entry, entry.state, typeIndex)).decrement()
    }

    private func labels(_ entry: DeliveredNotification, _ state: DeliveryState, _ typeIndex: Int) -> [(String, String)]
    {
        [
            ("environment", entry.environment.rawValue), ("state", state.rawValue),
            ("push_type", PushMetricLabels.pushTypes[typeIndex]),
        ]
    }

    /// A provider token verified in full and taken into use.
    func tokenVerified() { verified.increment() }

    /// A request whose provider token was refused with `reason`.
    func tokenRejected(_ reason: APNsReason) {
        registry.makeCounter(
            descriptor: Self.tokens, labels: [("result", "rejected"), ("reason", reason.rawValue)]
        ).increment()
    }
}

extension MockFault.Kind {
    /// The kind's name in the admin API and in `kkpush_mock_faults_fired_total`'s `fault` label.
    var metricName: String {
        switch self {
        case .respond: "respond"
        case .delay: "delay"
        case .goAway: "goaway"
        case .closeConnection: "close"
        case .resetConnection: "reset"
        case .stall: "stall"
        case .blackHole: "blackhole"
        }
    }
}
