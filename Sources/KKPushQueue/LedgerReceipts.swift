package import Foundation
package import KKPushCore

// `kkpush receipts` without a push queue: the ledger of a send-batch run (its JSON result lines) joined with the
// app's receipts, into the same ``QueueReceiptsReport`` the queue gives. Here rather than in KKPushBatch: the report
// type is this module's, and KKPushBatch (which links neither libpq nor the queue) must not depend on it; the join
// itself touches no database.

/// One accepted push of a send-batch ledger: its input line, token, apns-id and environment, and the push id its
/// payload carried (the payload's `kk_push_id`), when known.
package struct LedgerPush: Sendable, Equatable {
    /// The `index` of its result line: the input line's number.
    package var index: Int
    package var deviceToken: String
    package var apnsID: String
    /// The result line's `environment`; `unknown` when it has none.
    package var environment: String
    package var pushID: String?

    package init(index: Int, deviceToken: String, apnsID: String, environment: String, pushID: String? = nil) {
        self.index = index
        self.deviceToken = deviceToken
        self.apnsID = apnsID
        self.environment = environment
        self.pushID = pushID
    }
}

/// The join of a send-batch ledger with the app's receipts.
package enum LedgerReceipts {
    /// The accepted pushes of a ledger's text (send-batch's result lines: `index`, `token`, `status`, `apns_id`,
    /// `environment`, …). Blank lines are skipped; rejected and failed lines and broadcast lines (`"token": null`)
    /// are not pushes a device could receive and are left out. A line that is not a JSON object, or an accepted line
    /// without its index, token or a UUID apns-id, is `ledger-invalid` naming `label` (how the caller names the
    /// file) and the line.
    package static func accepted(ledger text: String, label: String) throws -> [LedgerPush] {
        var pushes: [LedgerPush] = []
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            func bad(_ what: String) -> KKPushError {
                KKPushError(
                    code: .ledgerInvalid, message: "Line \(offset + 1) of the ledger \(label) \(what).",
                    fix:
                        "Give the result lines the batch sender wrote (sendBatchCommand), unedited: one JSON object a line: index, token, status, apns_id, environment, …."
                )
            }
            let value: JSONValue
            do {
                value = try JSONValue.parse(line)
            } catch {
                throw bad("is not JSON: \(error.message)")
            }
            guard let object = value.objectValue else { throw bad("is \(value.jsonTypePhrase), not a result line") }
            guard let status = object["status"]?.stringValue else { throw bad("has no status") }
            guard status == "accepted" else { continue }
            if object["channel"]?.stringValue != nil, object["token"] == .null { continue }
            guard let index = object["index"]?.intValue, index > 0 else { throw bad("has no index (a line number)") }
            guard let token = object["token"]?.stringValue, !token.isEmpty else { throw bad("has no token") }
            guard let apnsID = object["apns_id"]?.stringValue, UUID(uuidString: apnsID) != nil else {
                throw bad("is accepted but has no apns_id (a UUID)")
            }
            pushes.append(
                LedgerPush(
                    index: index, deviceToken: token.lowercased(), apnsID: apnsID.lowercased(),
                    environment: object["environment"]?.stringValue ?? "unknown"))
        }
        return pushes
    }

    /// The push id (`kk_push_id`) each line of a send-batch token file carried in its own `payload`, by line
    /// number: the ledger's `index` is that number. Lines without one (plain tokens, a payload without the key)
    /// are absent; `payloadKey` is the payload's key of the push id.
    package static func pushIDs(tokens text: String, payloadKey: String) -> [Int: String] {
        var ids: [Int: String] = [:]
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("{"), let object = (try? JSONValue.parse(line))?.objectValue,
                let payload = object["payload"]?.objectValue
            else { continue }
            switch payload[payloadKey] {
            case .string(let id) where !id.isEmpty: ids[offset + 1] = id
            case .int(let n): ids[offset + 1] = String(n)
            default: continue
            }
        }
        return ids
    }

    /// The report of `pushes` (sent with `pushType` and `priority`, the batch's own; accepted at `acceptedAt`)
    /// joined with `receipts`: a receipt matches the pushes of its apns-id (case-insensitive; and of its device
    /// token when it names one), else those of its push id and token; a receipt by push id without a token matches
    /// only when exactly one push carries that id (a fan-out's pushes share it: the report does not guess among
    /// them, as the queue does not). A push counts the earliest receipt's arrival and the last-handled receipt's
    /// `handled`; a push without a receipt takes the app version and build of its token's latest receipt. Pushes
    /// accepted less than `grace` seconds before `now` without a receipt are awaiting; tokens whose every push is
    /// past the grace without a receipt are named (at most `limit`), only when some receipt matched at all.
    package static func report(
        pushes: [LedgerPush], receipts: [QueueReceipt], pushType: String, priority: Int, acceptedAt: Date,
        grace: Double, now: Date, source: String, limit: Int = 1000
    ) -> QueueReceiptsReport {
        var byApnsID: [String: [Int]] = [:]
        var byPushID: [String: [Int]] = [:]
        for (i, push) in pushes.enumerated() {
            byApnsID[push.apnsID, default: []].append(i)
            if let id = push.pushID { byPushID[id, default: []].append(i) }
        }
        var matched: [[QueueReceipt]] = Array(repeating: [], count: pushes.count)
        var unmatched = 0
        for receipt in receipts {
            let token = receipt.deviceToken?.lowercased()
            var hits: [Int] = []
            if let apnsID = receipt.apnsID?.lowercased() {
                hits = (byApnsID[apnsID] ?? []).filter { token == nil || pushes[$0].deviceToken == token }
            } else if let pushID = receipt.pushID {
                let carriers = byPushID[pushID] ?? []
                hits = token.map { t in carriers.filter { pushes[$0].deviceToken == t } } ?? carriers
                if token == nil, hits.count > 1 { hits = [] }
            }
            if hits.isEmpty { unmatched += 1 }
            for i in hits { matched[i].append(receipt) }
        }
        // A token's latest receipt (its app version and build), for its pushes without one.
        var latest: [String: QueueReceipt] = [:]
        for (i, list) in matched.enumerated() {
            for r in list where r.appVersion != nil || r.appBuild != nil {
                let token = pushes[i].deviceToken
                if let known = latest[token], known.receivedAt >= r.receivedAt { continue }
                latest[token] = r
            }
        }
        struct Key: Hashable {
            var environment: String
            var appVersion: String?
            var appBuild: String?
        }
        let pastGrace = now.timeIntervalSince(acceptedAt) >= grace
        var groups: [Key: QueueReceiptsReport.Group] = [:]
        var tokenStats: [String: (environment: String, accepted: Int, received: Int)] = [:]
        for (i, push) in pushes.enumerated() {
            let list = matched[i]
            // The last-handled receipt decides what the app did, as on a queue row.
            let last = list.max { ($0.handledAt ?? $0.receivedAt) < ($1.handledAt ?? $1.receivedAt) }
            let versioned = list.filter { $0.appVersion != nil || $0.appBuild != nil }.max {
                $0.receivedAt < $1.receivedAt
            }
            let app = versioned ?? latest[push.deviceToken]
            let key = Key(environment: push.environment, appVersion: app?.appVersion, appBuild: app?.appBuild)
            var g =
                groups[key]
                ?? QueueReceiptsReport.Group(
                    pushType: pushType, priority: priority, environment: push.environment,
                    appVersion: key.appVersion, appBuild: key.appBuild, accepted: 0, received: 0, refreshed: 0,
                    shown: 0, dropped: 0, notReceived: 0, awaiting: 0)
            g.accepted += 1
            if let last {
                g.received += 1
                switch last.handled {
                case "refreshed": g.refreshed += 1
                case "shown": g.shown += 1
                case "dropped": g.dropped += 1
                default: break
                }
            } else if pastGrace {
                g.notReceived += 1
            } else {
                g.awaiting += 1
            }
            groups[key] = g
            var stats = tokenStats[push.deviceToken] ?? (push.environment, 0, 0)
            stats.accepted += 1
            if last != nil { stats.received += 1 }
            tokenStats[push.deviceToken] = stats
        }
        let sorted = groups.values.sorted { a, b in
            (a.environment, a.appVersion ?? "\u{10FFFF}", a.appBuild ?? "\u{10FFFF}")
                < (b.environment, b.appVersion ?? "\u{10FFFF}", b.appBuild ?? "\u{10FFFF}")
        }
        let receiptsSeen = sorted.contains { $0.received > 0 }
        var silent: [QueueReceiptsReport.SilentToken] = []
        if receiptsSeen, pastGrace {
            silent = tokenStats.filter { $0.value.received == 0 }
                .map { token, stats in
                    QueueReceiptsReport.SilentToken(
                        deviceToken: token, environment: stats.environment, accepted: stats.accepted,
                        lastAcceptedAt: acceptedAt, appVersion: latest[token]?.appVersion,
                        appBuild: latest[token]?.appBuild)
                }
                .sorted { ($1.accepted, $0.deviceToken) < ($0.accepted, $1.deviceToken) }
        }
        return QueueReceiptsReport(
            since: nil, graceSeconds: grace, groups: sorted, neverReceived: Array(silent.prefix(max(0, limit))),
            neverReceivedTotal: silent.count, receiptsSeen: receiptsSeen, warnings: [], source: source,
            unmatchedReceipts: unmatched)
    }
}
