package import Foundation
package import KKPushClient
package import KKPushCore
import KKPushSystem
package import Prometheus

/// The counters of one `send-batch` run, written by `--metrics-file` in the Prometheus text format when
/// the batch ends (for node-exporter's textfile collector). One registry per run; every metric is
/// defined here and counted where ``BatchLedger`` counts the summary, so they agree exactly.
///
/// | name | type | labels |
/// | --- | --- | --- |
/// | `kkpush_batch_pushes_total` | counter | `outcome` (accepted, rejected, failed), `status` (HTTP status, "" for failed), `reason` (APNs reason, failure kind, "" for accepted), `environment`, `push_type`, `priority` (``PushMetricLabels``) |
/// | `kkpush_batch_possibly_duplicated_total` | counter | — |
/// | `kkpush_batch_attempts_total` | counter | — (requests sent, retries included) |
/// | `kkpush_batch_blank_lines_total` | counter | — |
/// | `kkpush_batch_other_shard_lines_total` | counter | — (lines left to the other parts of `--shard K/N`) |
/// | `kkpush_batch_resume_skipped_total` | counter | `reason` ("accepted" or the earlier rejection's reason) |
/// | `kkpush_batch_push_duration_seconds` | histogram | — (pushes sent at least once) |
/// | `kkpush_batch_duration_seconds` | gauge | — |
/// | `kkpush_batch_end_time_seconds` | gauge | — |
/// | `kkpush_batch_exit_code` | gauge | — |
package final class BatchMetrics: Sendable {
    package let registry = PrometheusCollectorRegistry()

    /// `kkpush_batch_<name>[_<unit>]`, with its help text.
    package static func metric(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "kkpush", subsystem: "batch", metricName: name, unitName: unit, helpText: help)
    }

    /// `kkpush_batch_pushes_total`.
    package static var pushes: MetricNameDescriptor {
        metric(
            "pushes", unit: "total",
            "Pushes of the batch by outcome, HTTP status (empty for failed), reason (APNs reason or failure kind; empty for accepted), environment, push type and priority."
        )
    }
    /// `kkpush_batch_resume_skipped_total`; `resumeOption` names the option that skips lines, in the help text.
    package static func skipped(resumeOption: String) -> MetricNameDescriptor {
        metric(
            "resume_skipped", unit: "total",
            "Input lines \(resumeOption) skipped as done in the earlier run, by that run's result.")
    }
    /// The option that makes a run skip lines done before, as the help text names it.
    private let resumeOption: String
    /// `kkpush_batch_pushes_total` of accepted pushes, by environment: made once, so the common outcome does not
    /// look its counter up in the registry (which builds the metric's name and checks its help text each time).
    private let accepted: [APNsEnvironment: Counter]
    private let acceptedBroadcasts: [APNsEnvironment: Counter]
    /// The batch's `push_type` and `priority` labels (``PushMetricLabels``); a channel line's broadcast is
    /// `liveactivity` at the batch's priority.
    private let pushTypeLabel: String
    private let priorityLabel: String
    private let duplicated: Counter
    private let attempts: Counter
    private let blank: Counter
    private let otherShard: Counter
    private let pushDuration: DurationHistogram
    private let elapsed: Gauge
    private let endTime: Gauge
    private let exitCode: Gauge

    package static let durationBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10), .seconds(30), .seconds(60),
    ]

    /// `resumeOption`: the option that skips lines done before, as the help text of
    /// `kkpush_batch_resume_skipped_total` names it.
    /// `pushType` and `priority`: the batch's own (every device line's), for the labels of its pushes.
    package init(resumeOption: String, pushType: PushType? = nil, priority: Int? = nil) {
        self.resumeOption = resumeOption
        pushTypeLabel = PushMetricLabels.pushType(pushType?.rawValue)
        priorityLabel = PushMetricLabels.priority(priority)
        duplicated = registry.makeCounter(
            descriptor: Self.metric(
                "possibly_duplicated", unit: "total",
                "Pushes that may have been delivered twice (sent, but no answer came)."
            ))
        attempts = registry.makeCounter(
            descriptor: Self.metric(
                "attempts", unit: "total",
                "Requests sent for the batch's pushes, retries included (the server's request count to compare)."))
        blank = registry.makeCounter(
            descriptor: Self.metric("blank_lines", unit: "total", "Blank and comment lines of the input (not pushes)."))
        otherShard = registry.makeCounter(
            descriptor: Self.metric(
                "other_shard_lines", unit: "total", "Input lines left to the other parts of the shard (K/N)."))
        pushDuration = registry.makeDurationHistogram(
            descriptor: Self.metric(
                "push_duration", unit: "seconds",
                "Time of each push sent at least once, from its first send to its outcome (retries included)."),
            buckets: Self.durationBuckets)
        elapsed = registry.makeGauge(
            descriptor: Self.metric(
                "duration", unit: "seconds", "How long the batch ran, from its first push to its end."))
        endTime = registry.makeGauge(
            descriptor: Self.metric("end_time", unit: "seconds", "When the batch ended, in seconds since 1970."))
        // A status, not a quantity: no unit.
        exitCode = registry.makeGauge(
            descriptor: Self.metric(
                "exit_code", unit: "",
                "The exit status of send-batch: 0 all accepted, 1 some not, 2 error, 74 output failed, 130/143 signal.")
        )
        var accepted: [APNsEnvironment: Counter] = [:]
        var acceptedBroadcasts: [APNsEnvironment: Counter] = [:]
        for env in [APNsEnvironment.sandbox, .production] {
            let labels = [("outcome", "accepted"), ("status", "200"), ("reason", ""), ("environment", env.rawValue)]
            accepted[env] = registry.makeCounter(
                descriptor: Self.pushes,
                labels: labels + [("push_type", pushTypeLabel), ("priority", priorityLabel)])
            acceptedBroadcasts[env] = registry.makeCounter(
                descriptor: Self.pushes,
                labels: labels + [("push_type", PushType.liveactivity.rawValue), ("priority", priorityLabel)])
        }
        self.accepted = accepted
        self.acceptedBroadcasts = acceptedBroadcasts
    }

    // MARK: Recording (under the ledger's lock, where it counts)

    /// One push's outcome, as the ledger counts it.
    /// `broadcast`: the outcome of a channel line's broadcast (push type `liveactivity`).
    package func record(_ outcome: PushOutcome, broadcast: Bool = false) {
        if outcome.possiblyDuplicated { duplicated.increment() }
        if outcome.attempts > 0 {
            attempts.increment(by: Int64(outcome.attempts))
            pushDuration.record(outcome.duration)
        }
        if case .accepted = outcome.result, let environment = outcome.endpoint.environment,
            let counter = (broadcast ? acceptedBroadcasts : accepted)[environment]
        {
            counter.increment()
            return
        }
        let status: String
        let reason: String
        switch outcome.result {
        case .accepted:
            (status, reason) = ("200", "")
        case .rejected(let r):
            (status, reason) = (String(r.status), r.reason.rawValue)
        case .failed(let f):
            (status, reason) = ("", f.kind.rawValue)
        }
        let labels = [
            ("outcome", outcome.status), ("status", status), ("reason", reason),
            ("environment", outcome.endpoint.environment?.rawValue ?? ""),
            ("push_type", broadcast ? PushType.liveactivity.rawValue : pushTypeLabel), ("priority", priorityLabel),
        ]
        registry.makeCounter(descriptor: Self.pushes, labels: labels).increment()
    }

    /// A blank or comment line.
    package func countBlank() { blank.increment() }
    /// A line of another part of the shard.
    package func countOtherShard() { otherShard.increment() }

    /// A line `--resume` skipped, with why.
    package func countResumeSkip(_ reason: String) {
        registry.makeCounter(descriptor: Self.skipped(resumeOption: resumeOption), labels: [("reason", reason)])
            .increment()
    }

    /// The end of the run: how long it took, when, and its exit status.
    package func finish(elapsed: Duration, exitCode code: Int32, at date: Date = Date()) {
        let c = elapsed.components
        self.elapsed.set(Double(c.seconds) + Double(c.attoseconds) / 1e18)
        endTime.set(date.timeIntervalSince1970.rounded())
        exitCode.set(Double(code))
    }

    /// The text exposition of every metric.
    package func exposition() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }

}
