package import Foundation
import KKPushCore
package import Prometheus
import Synchronization

/// The counters of one `kkpush worker`, in the Prometheus text format (one registry per worker, as
/// `send-batch`'s metrics), written to a file by the caller as the worker runs and when it ends.
///
/// | name | type | labels |
/// | --- | --- | --- |
/// | `kkpush_queue_pushes_total` | counter | `outcome` (accepted, rejected, retry, dead, returned, held), `reason` (APNs reason or failure kind; empty for accepted), `push_type` and `priority` (the row's, on ``PushMetricLabels``' bounded sets) |
/// | `kkpush_queue_claimed_total` | counter | — (rows claimed, expired leases included) |
/// | `kkpush_queue_reclaimed_total` | counter | — (expired leases this worker took over, each once) |
/// | `kkpush_queue_lease_lost_total` | counter | — (outcomes not written: the lease had passed to another worker) |
/// | `kkpush_queue_possibly_duplicated_total` | counter | — |
/// | `kkpush_queue_in_flight` | gauge | — (rows claimed, outcome not yet written) |
/// | `kkpush_queue_push_duration_seconds` | histogram | — |
/// | `kkpush_queue_webhooks_total` | counter | `result` (delivered, retry, failed); registered by ``QueueWebhookDelivery`` |
package final class QueueMetrics: Sendable {
    package let registry = PrometheusCollectorRegistry()
    private let claimed: Counter
    private let reclaimed: Counter
    private let leaseLost: Counter
    private let duplicated: Counter
    private let inFlight: Gauge
    private let duration: DurationHistogram
    private let pushCounters = Mutex<[PushCounterKey: Counter]>([:])

    private struct PushCounterKey: Hashable {
        var outcome: String
        var reason: String
        var pushType: String
        var priority: String
    }

    static func metric(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "kkpush", subsystem: "queue", metricName: name, unitName: unit, helpText: help)
    }

    static var pushes: MetricNameDescriptor {
        metric(
            "pushes", unit: "total",
            "Attempts of queued pushes by the row's next state (returned: handed back unsent at a stop; held: handed back for the worker's credential or endpoints) and reason."
        )
    }

    package init() {
        claimed = registry.makeCounter(
            descriptor: Self.metric("claimed", unit: "total", "Rows this worker claimed, expired leases included."))
        reclaimed = registry.makeCounter(
            descriptor: Self.metric(
                "reclaimed", unit: "total",
                "Rows whose expired lease this worker took over, each counted once (flagged possibly_duplicated)."))
        leaseLost = registry.makeCounter(
            descriptor: Self.metric(
                "lease_lost", unit: "total",
                "Outcomes not written because the row's lease had expired and another worker had claimed it."))
        duplicated = registry.makeCounter(
            descriptor: Self.metric(
                "possibly_duplicated", unit: "total",
                "Attempts that may have delivered a push a second time: no answer came, or a flagged row was accepted.")
        )
        inFlight = registry.makeGauge(
            descriptor: Self.metric("in_flight", unit: "", "Rows claimed whose outcome is not written yet."))
        duration = registry.makeDurationHistogram(
            descriptor: Self.metric("push_duration", unit: "seconds", "Time of each attempt, retries included."),
            buckets: [
                .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
            ])
    }

    func recordClaim(_ rows: Int, reclaimed count: Int) {
        claimed.increment(by: Int64(rows))
        if count > 0 { reclaimed.increment(by: Int64(count)) }
    }

    func record(
        outcome: String, reason: String, pushType: String, priority: Int?, duplicated flagged: Bool,
        duration time: Duration
    ) {
        pushCounter(
            outcome: outcome, reason: reason, pushType: PushMetricLabels.pushType(pushType),
            priority: PushMetricLabels.priority(priority)
        ).increment()
        if flagged { duplicated.increment() }
        duration.record(time)
    }

    /// The pushes counter of one set of labels, made once: the registry's `makeCounter` checks the name, labels and
    /// help text on every call, which cost a worker about 2 % of its CPU when called for every push. The label
    /// sets are few (outcomes, reasons, the bounded push types and priorities).
    private func pushCounter(outcome: String, reason: String, pushType: String, priority: String) -> Counter {
        let key = PushCounterKey(outcome: outcome, reason: reason, pushType: pushType, priority: priority)
        return pushCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: Self.pushes,
                labels: [("outcome", outcome), ("reason", reason), ("push_type", pushType), ("priority", priority)])
            counters[key] = counter
            return counter
        }
    }

    func recordLeaseLost(_ count: Int) { if count > 0 { leaseLost.increment(by: Int64(count)) } }

    func setInFlight(_ count: Int) { inFlight.set(Double(count)) }

    /// The text exposition of every metric.
    package func exposition() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }
}
