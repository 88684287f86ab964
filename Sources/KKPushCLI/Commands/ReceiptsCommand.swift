import ArgumentParser
import Foundation
import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushQueue
import KKPushStore
import KKPushSystem
import KantineKoning
import KantineKoningReceipts

/// `kkpush receipts`: accepted vs received vs handled, from the push queue's receipt columns.
struct ReceiptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipts",
        abstract: "Accepted vs received vs handled pushes of the push queue, from the app's receipts.",
        discussion: """
            Reads public.kkpush_push_queue (schema version 3: queue migrate adds the receipt columns) and counts, by \
            push type, priority, environment, app version and build, the rows APNs accepted, those the app \
            confirmed with a receipt (received) and what it did (handled: refreshed or shown; dropped). A receipt \
            is recorded on its row by apns-id, or by the payload's kk_push_id with the device's token (the DocC \
            articles PushQueue and AfterAPNsAccepts give the contract). A row without a receipt takes the app \
            version of its token's latest receipt; unknown if it has none.

            Then the tokens whose pushes were accepted more than --grace seconds ago and none received: the stale \
            token APNs does not report (it answers 200 for an app deleted, never opened or restored to another \
            phone). They are named only when some receipt came in the window: with none at all the app posts no \
            receipts and nothing tells a stale token from a working one. An app version that posts no receipts \
            makes its tokens look stale: compare by app version.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(
        help:
            "Only rows enqueued since then: a time back from now (90m, 24h, 7d, 3600s) or an ISO 8601 time (default: every row)."
    )
    var since: String?
    @Option(
        parsing: .unconditional,
        help: "Seconds after its acceptance a push without a receipt counts as not received, 0 to 2592000.")
    var grace: Double = 3600
    @Flag(
        help:
            "Print a JSON object: since, grace_seconds, groups (push_type, priority, environment, app_version, app_build, accepted, received, handled, refreshed, shown, dropped, not_received, awaiting), totals, never_received (device_token, environment, accepted, last_accepted_at, app_version, app_build), never_received_total, receipts_seen."
    )
    var json = false

    func validate() throws {
        if !grace.isFinite || grace < 0 || grace > 2_592_000 {
            throw ValidationError("--grace \(grace) is not between 0 and 2592000 seconds (30 days).")
        }
        if let since, Self.parseSince(since, now: Date()) == nil {
            throw ValidationError(
                "--since '\(since)' is neither a time back from now (90m, 24h, 7d, 3600s) nor an ISO 8601 time (2027-01-15T09:30:00Z)."
            )
        }
    }

    /// `--since`: a number with `s`, `m`, `h` or `d` back from `now`, or an ISO 8601 time; nil if neither.
    static func parseSince(_ text: String, now: Date) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = trimmed.last.flatMap({ units[$0] }), let n = Double(trimmed.dropLast()), n.isFinite, n >= 0,
            n * unit <= 3650 * 86_400
        {
            return now.addingTimeInterval(-n * unit)
        }
        if let date = try? Date(trimmed, strategy: Date.ISO8601FormatStyle()) { return date }
        return try? Date(trimmed, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    func run() async throws {
        try await reportingErrors {
            let url = try database.url()
            let from = since.flatMap { Self.parseSince($0, now: Date()) }
            let report = try await PushQueueStore.receiptsReport(url: url, since: from, grace: grace)
            for warning in report.warnings { StandardError.line("warning: \(FlagWords.common.apply(warning))") }
            Output.printReport(report, json: json)
        }
    }
}

extension ReceiptsCommand {
    /// Where `backend serve --receipts-db` records the app's receipts: on the push queue row of each receipt's push
    /// (by apns-id, or by push id and the enrollment's token); the rows marked. A receipt of an enrollment without a
    /// token, by push id alone, marks nothing (the queue refuses to guess among a fan-out's rows).
    static func queueSink(_ store: PushQueueStore) -> PushReceiptBook.Sink {
        { recorded in
            let receipt = recorded.receipt
            if receipt.apnsID == nil, recorded.deviceToken == nil { return 0 }
            return try await store.recordReceipt(
                QueueReceipt(
                    apnsID: receipt.apnsID, pushID: receipt.pushID, deviceToken: recorded.deviceToken,
                    receivedAt: receipt.receivedAt, handledAt: receipt.handledAt, handled: receipt.handled.rawValue,
                    appVersion: receipt.appVersion, appBuild: receipt.build)
            ).count
        }
    }

    /// The push queue of `--receipts-db`, checked to have the receipt columns (version 3) before the backend starts.
    static func queueStore(_ text: String) async throws -> PushQueueStore {
        guard PostgresURL.looksLikeURL(text) else {
            throw CLIError.usage(
                .storeUrlInvalid,
                "--receipts-db is not a PostgreSQL connection string: the push queue lives in PostgreSQL.",
                fix: "Give postgres://USER@HOST/DB (the database of the push queue), or host=HOST dbname=DB.")
        }
        let url = try PostgresURL(
            parsing: text, origin: "--receipts-db", environment: CommandIO.current.environment)
        let store = PushQueueStore(url: url)
        do {
            try PushQueueStore.requireReceipts(try await store.checkSchema(grant: .worker), url: url)
        } catch {
            await store.close()
            throw error
        }
        return store
    }
}

extension QueueReceiptsReport: CommandReport {
    /// A table of the groups, the totals, then the tokens that accept but never receive (or why none is named).
    var textLines: [String] {
        if groups.isEmpty {
            return ["no accepted pushes in the push queue\(since.map { " since \(receiptStamp($0))" } ?? "")"]
        }
        let header = [
            "push type", "priority", "environment", "app version", "build", "accepted", "received", "handled",
            "refreshed", "shown", "dropped", "not received",
        ]
        var lines = Output.table(
            [header]
                + groups.map { g in
                    [
                        g.pushType, String(g.priority), g.environment, g.appVersion ?? "unknown",
                        g.appBuild ?? "unknown", String(g.accepted), String(g.received), String(g.handled),
                        String(g.refreshed), String(g.shown), String(g.dropped), String(g.notReceived),
                    ]
                })
        let t = totals
        let awaiting =
            t.awaiting > 0 ? "; \(t.awaiting) accepted within the last \(Int(graceSeconds)) s, no receipt yet" : ""
        lines.append(
            "total: \(t.accepted) accepted, \(t.received) received, \(t.handled) handled (\(t.refreshed) refreshed, \(t.shown) shown), \(t.dropped) dropped, \(t.notReceived) not received\(awaiting)"
        )
        if !receiptsSeen {
            lines.append(
                "no receipts in this window: the app posts none (or its backend records none), so no token can be called stale"
            )
        } else if neverReceived.isEmpty {
            lines.append("every token with accepted pushes confirmed at least one")
        } else {
            let count = "\(neverReceivedTotal) token\(neverReceivedTotal == 1 ? "" : "s")"
            lines.append("accepted but never received (\(count); APNs reports none of them):")
            for s in neverReceived {
                let last = s.lastAcceptedAt.map { ", last accepted \(receiptStamp($0))" } ?? ""
                let app =
                    s.appVersion.map { ", last receipt from app \($0)\(s.appBuild.map { " (\($0))" } ?? "")" }
                    ?? ", never sent a receipt"
                lines.append("  \(s.deviceToken) \(s.environment): \(s.accepted) accepted, none received\(last)\(app)")
            }
            if neverReceived.count < neverReceivedTotal {
                lines.append("  … and \(neverReceivedTotal - neverReceived.count) more (--json lists the first ones)")
            }
        }
        return lines
    }
}
