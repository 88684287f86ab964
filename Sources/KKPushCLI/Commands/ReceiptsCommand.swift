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

/// `kkpush receipts`: accepted vs received vs handled, from the push queue's receipt columns, or from a send-batch
/// ledger joined with a receipts file.
struct ReceiptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipts",
        abstract:
            "Accepted vs received vs handled pushes of the push queue or of a send-batch run, from the app's receipts.",
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

            With --ledger and --receipts instead of --db: the result lines of a send-batch run (its standard output \
            or --output) joined with the receipts the app posted (the backend's GET /admin/receipts answer, or JSON \
            lines of receipts), into the same report. A receipt matches its push by apns-id (any case), else by \
            kk_push_id and device token: the batch's (--push-id, as its payload carried it) or each line's own \
            payload's (--tokens, the batch's token file). The ledger does not say the batch's push type and \
            priority: give them as send-batch had them (--push-type, --priority). Its pushes count as accepted when \
            the ledger file was last written. The report says how many receipts matched no push.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(help: "The result lines of a send-batch run (JSON lines), to join with --receipts instead of --db.")
    var ledger: String?
    @Option(
        help:
            "The app's receipts for --ledger: the backend's GET /admin/receipts answer, or JSON lines of receipts (apns_id or push_id, received_at, handled, …)."
    )
    var receipts: String?
    @Option(help: "With --ledger: the push type the batch sent (alert, background, …).")
    var pushType: String = "alert"
    @Option(help: "With --ledger: the priority the batch sent, 1, 5 or 10 (default: 5 for background, else 10).")
    var priority: Int?
    @Option(help: "With --ledger: the kk_push_id the batch's payload carried (its receipts match by it and the token).")
    var pushID: String?
    @Option(help: "With --ledger: the batch's token file, whose JSON lines' own payloads may carry a kk_push_id.")
    var tokens: String?
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
            "Print a JSON object: since, grace_seconds, groups (push_type, priority, environment, app_version, app_build, accepted, received, handled, refreshed, shown, dropped, not_received, awaiting), totals, never_received (device_token, environment, accepted, last_accepted_at, app_version, app_build), never_received_total, receipts_seen; with --ledger also unmatched_receipts (receipts that matched no push)."
    )
    var json = false

    func validate() throws {
        if (ledger == nil) != (receipts == nil) {
            throw ValidationError(
                "--ledger and --receipts go together: the send-batch result lines and the app's receipts to join.")
        }
        if ledger != nil {
            if database.db != nil { throw ValidationError("--db and --ledger are two sources: give one of them.") }
            if since != nil {
                throw ValidationError("--since is for --db: a ledger is one send-batch run; give --ledger without it.")
            }
            guard PushType(pushType).isKnown else {
                throw ValidationError(
                    "--push-type '\(pushType)' is not a push type (\(PushType.allCases.map(\.rawValue).joined(separator: ", ")))."
                )
            }
            if let priority, ![1, 5, 10].contains(priority) {
                throw ValidationError("--priority \(priority) is not 1, 5 or 10.")
            }
        } else if pushID != nil || tokens != nil || priority != nil {
            throw ValidationError(
                "--push-id, --tokens and --priority are for --ledger (the queue's rows carry their own).")
        }
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
            if let ledger, let receipts {
                let report = try ledgerReport(ledger: ledger, receipts: receipts, now: Date())
                Output.printReport(report, json: json)
                return
            }
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

extension ReceiptsCommand {
    /// The report of `--ledger` joined with `--receipts`.
    func ledgerReport(ledger: String, receipts: String, now: Date) throws -> QueueReceiptsReport {
        let ledgerText = try InputFile.readText(
            ledger, what: "send-batch ledger", label: "--ledger", maximumSize: 1 << 30, allowEmpty: true)
        // The ledger carries no time for an accepted push: its file's last write is when the run's last result came
        // (a choice: it errs towards awaiting, never towards calling a token stale too early); standard input is now.
        let acceptedAt =
            ledger == "-"
            ? now
            : ((try? FileManager.default.attributesOfItem(atPath: ledger))?[.modificationDate] as? Date ?? now)
        var pushes = try LedgerReceipts.accepted(ledger: ledgerText, label: "--ledger \(ledger)")
        if let tokens {
            let text = try InputFile.readText(
                tokens, what: "token file", label: "--tokens", maximumSize: 1 << 30, allowEmpty: true)
            let ids = LedgerReceipts.pushIDs(tokens: text, payloadKey: PushReceipt.payloadKey)
            for i in pushes.indices { pushes[i].pushID = ids[pushes[i].index] ?? pushID }
        } else if let pushID {
            for i in pushes.indices { pushes[i].pushID = pushID }
        }
        let list = try Self.readReceipts(receipts, now: now)
        let type = PushType(pushType)
        return LedgerReceipts.report(
            pushes: pushes, receipts: list, pushType: type.rawValue,
            priority: priority ?? type.defaultPriority,
            acceptedAt: acceptedAt, grace: grace, now: now, source: "the ledger \(ledger)")
    }

    /// The receipts of `path`: the backend's `GET /admin/receipts` answer (`{"receipts": [...]}`, each with its
    /// `device_token`), a JSON array of receipts, or JSON lines of receipts as the app posts them. Each is checked as
    /// the backend checks a posted one; a bad one is `receipt-invalid` naming the file and the line or entry.
    static func readReceipts(_ path: String, now: Date) throws -> [QueueReceipt] {
        let text = try InputFile.readText(
            path, what: "receipts file", label: "--receipts", maximumSize: 1 << 30, allowEmpty: true)
        var entries: [(place: String, value: JSONValue)] = []
        if let whole = try? JSONValue.parse(text) {
            let listed = whole.objectValue?["receipts"] ?? whole
            guard let array = listed.arrayValue else {
                if whole.objectValue?["receipts"] != nil {
                    throw KKPushError(
                        code: .receiptInvalid,
                        message:
                            "The receipts file --receipts \(path) has receipts as \(listed.jsonTypePhrase), not an array.",
                        fix: "Give the backend's GET /admin/receipts answer as it came, or JSON lines of receipts.")
                }
                entries = [("line 1", whole)]
                return try entries.map { try receipt($0.value, place: $0.place, path: path, now: now) }
            }
            entries = array.enumerated().map { ("receipts[\($0.offset)]", $0.element) }
        } else {
            for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
                if line.isEmpty { continue }
                do {
                    entries.append(("line \(offset + 1)", try JSONValue.parse(line)))
                } catch {
                    throw KKPushError(
                        code: .receiptInvalid,
                        message:
                            "Line \(offset + 1) of the receipts file --receipts \(path) is not JSON: \(error.message)",
                        fix: "Give one receipt a line as a JSON object, or the backend's GET /admin/receipts answer.")
                }
            }
        }
        return try entries.map { try receipt($0.value, place: $0.place, path: path, now: now) }
    }

    /// One receipt of the file: the backend's listing fields (`device_token`, …) taken off, the rest checked as the
    /// receipt contract says.
    static func receipt(_ value: JSONValue, place: String, path: String, now: Date) throws -> QueueReceipt {
        guard var object = value.objectValue else {
            throw KKPushError(
                code: .receiptInvalid,
                message: "The receipt at \(place) of --receipts \(path) is \(value.jsonTypePhrase), not a JSON object.",
                fix: "Give each receipt as a JSON object (apns_id or push_id, received_at, handled, …).")
        }
        let token = object["device_token"]?.stringValue
        for key in ["tenant_slug", "device_id", "device_token", "recorded_at", "queue_rows"] {
            object.removeValue(forKey: key)
        }
        let parsed: PushReceipt.Parsed
        do {
            parsed = try PushReceipt.parse(JSONValue.object(object).encoded(), now: now)
        } catch {
            throw KKPushError(
                code: error.code, message: "The receipt at \(place) of --receipts \(path): \(error.message)",
                fix: error.fix)
        }
        let r = parsed.receipt
        return QueueReceipt(
            apnsID: r.apnsID, pushID: r.pushID, deviceToken: token, receivedAt: r.receivedAt, handledAt: r.handledAt,
            handled: r.handled.rawValue, appVersion: r.appVersion, appBuild: r.build)
    }
}

extension QueueReceiptsReport: CommandReport {
    /// A table of the groups, the totals, then the tokens that accept but never receive (or why none is named).
    var textLines: [String] {
        if groups.isEmpty {
            return [
                "no accepted pushes in \(source)\(since.map { " since \(receiptStamp($0))" } ?? "")"
            ] + unmatchedLines
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
        return lines + unmatchedLines
    }

    /// A ledger's report: the receipts that matched no push of it (another run's, or of pushes sent otherwise).
    private var unmatchedLines: [String] {
        guard let unmatchedReceipts else { return [] }
        return [
            unmatchedReceipts == 0
                ? "every receipt matched a push of the ledger"
                : "\(unmatchedReceipts) receipt\(unmatchedReceipts == 1 ? "" : "s") matched no push of the ledger (another run's pushes, or sent otherwise)"
        ]
    }
}
