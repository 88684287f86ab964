import Foundation
import KKPushCore
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Testing

/// Scheduled sends and quiet hours in Europe/Amsterdam across the daylight saving changes of 2026 (29 March, 25
/// October), with an injected clock: the local-time rule for the skipped and the repeated hour, the end of a quiet
/// window, and a worker's claim on a real PostgreSQL server deferring what is not time-critical.
@Suite("Scheduled sends and quiet hours (Europe/Amsterdam, PostgreSQL)", .serialized)
struct QueueQuietHoursTests {
    typealias Q = PushQueueFixtures
    static let amsterdam = TimeZone(identifier: "Europe/Amsterdam")!

    static func utc(_ text: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: text))
    }

    @Test(
        "A local send time: the skipped 02:30 of 29 March is 03:00 CEST, the repeated 02:30 of 25 October its CEST one")
    func localTimesAcrossDST() throws {
        let zone = try LocalTime.zone("Europe/Amsterdam", field: "timeZone")
        func at(_ text: String) throws -> Date { try LocalTime.instant(text, in: zone, field: "sendAt") }
        #expect(try at("2026-03-29 01:59") == Self.utc("2026-03-29T00:59:00Z"))
        #expect(try at("2026-03-29 02:00") == Self.utc("2026-03-29T01:00:00Z"))
        #expect(try at("2026-03-29 02:30") == Self.utc("2026-03-29T01:00:00Z"))
        #expect(try at("2026-03-29 03:00") == Self.utc("2026-03-29T01:00:00Z"))
        #expect(try at("2026-03-29 03:30:15") == Self.utc("2026-03-29T01:30:15Z"))
        #expect(try at("2026-10-25 02:30") == Self.utc("2026-10-25T00:30:00Z"))
        #expect(try at("2026-10-25T03:00") == Self.utc("2026-10-25T02:00:00Z"))
        #expect(try at("2026-07-01 19:30") == Self.utc("2026-07-01T17:30:00Z"))
        #expect(try at("2026-12-24 19:30") == Self.utc("2026-12-24T18:30:00Z"))
        for bad in ["2026-02-30 10:00", "2026-03-29", "29-03-2026 10:00", "2026-03-29 24:00", "tomorrow"] {
            let error = try #require(throws: KKPushError.self) { try at(bad) }
            #expect(error.code.rawValue == "queue-time-invalid" && error.message.contains("(sendAt)"))
        }
        let unknown = try #require(throws: KKPushError.self) {
            try LocalTime.zone("Europe/Atlantis", field: "timeZone")
        }
        #expect(unknown.code.rawValue == "queue-time-invalid" && unknown.message.contains("(timeZone)"))
    }

    @Test("A quiet window 22:00-07:00 ends at 07:00 local on the morning after, across both changes")
    func quietWindowAcrossDST() throws {
        let quiet = try QuietHours(parsing: "Europe/Amsterdam=22:00-07:00", field: "quietHours")
        // 23:40 CET on the 28th: the night has an hour less; 07:00 CEST is 05:00 UTC.
        #expect(quiet.end(containing: try Self.utc("2026-03-28T22:40:00Z")) == (try Self.utc("2026-03-29T05:00:00Z")))
        // 01:30 CET on the 29th (after midnight, before the change).
        #expect(quiet.end(containing: try Self.utc("2026-03-29T00:30:00Z")) == (try Self.utc("2026-03-29T05:00:00Z")))
        // 23:40 CEST on the 24th of October: the night has an hour more; 07:00 CET is 06:00 UTC.
        #expect(quiet.end(containing: try Self.utc("2026-10-24T21:40:00Z")) == (try Self.utc("2026-10-25T06:00:00Z")))
        // In the repeated hour: 02:30 CET (the second time).
        #expect(quiet.end(containing: try Self.utc("2026-10-25T01:30:00Z")) == (try Self.utc("2026-10-25T06:00:00Z")))
        // Outside: 21:59 and 07:00 local.
        #expect(quiet.end(containing: try Self.utc("2026-03-28T20:59:00Z")) == nil)
        #expect(quiet.end(containing: try Self.utc("2026-03-29T05:00:00Z")) == nil)
        // A window that ends in the skipped hour ends at the first instant after it.
        let late = try QuietHours(parsing: "Europe/Amsterdam=23:00-02:30", field: "quietHours")
        #expect(late.end(containing: try Self.utc("2026-03-28T22:30:00Z")) == (try Self.utc("2026-03-29T01:00:00Z")))
        // A window within one day.
        let lunch = try QuietHours(parsing: "Europe/Amsterdam=12:00-13:30", field: "quietHours")
        #expect(lunch.end(containing: try Self.utc("2026-10-25T11:10:00Z")) == (try Self.utc("2026-10-25T12:30:00Z")))
        for bad in [
            "22:00-07:00", "Europe/Atlantis=22:00-07:00", "Europe/Amsterdam=22-07", "Europe/Amsterdam=07:00-07:00",
        ] {
            let error = try #require(throws: KKPushError.self) { try QuietHours(parsing: bad, field: "quietHours") }
            #expect(error.code.rawValue == "queue-quiet-hours-invalid" && error.message.contains("(quietHours)"))
        }
    }

    @Test("What is time-critical: time-sensitive and critical alerts, Live Activity ends")
    func timeCritical() {
        #expect(
            QuietHours.isTimeCritical(pushType: "alert", payload: #"{"aps":{"interruption-level":"time-sensitive"}}"#))
        #expect(QuietHours.isTimeCritical(pushType: "alert", payload: #"{"aps":{"interruption-level":"critical"}}"#))
        #expect(!QuietHours.isTimeCritical(pushType: "alert", payload: #"{"aps":{"interruption-level":"active"}}"#))
        #expect(QuietHours.isTimeCritical(pushType: "liveactivity", payload: #"{"aps":{"event":"end","timestamp":1}}"#))
        #expect(!QuietHours.isTimeCritical(pushType: "liveactivity", payload: #"{"aps":{"event":"update"}}"#))
        #expect(!QuietHours.isTimeCritical(pushType: "alert", payload: #"{"aps":{"event":"end"}}"#))
        #expect(!QuietHours.isTimeCritical(pushType: "alert", payload: "not json"))
    }

    @Test("A claim at 23:40 on 28 March: ordinary pushes wait until 07:00 CEST (quiet-hours), time-critical ones go")
    func claimDefersAcrossSpringForward() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let tokens = TestTokens.random(5)
        func push(_ token: String, type: String = "alert", payload: String = Q.payload, quiet: String? = nil)
            -> QueueInsert
        {
            var insert = QueueInsert(
                deviceToken: token, topic: Q.topic, pushType: type, priority: 10, payload: payload,
                environment: .sandbox)
            insert.quietHours = quiet
            return insert
        }
        _ = try await PushQueueStore.withStore(url: url) { store in
            try await store.enqueue([
                push(tokens[0]),
                push(tokens[1], payload: #"{"aps":{"alert":"Dienst nu","interruption-level":"time-sensitive"}}"#),
                push(tokens[2], type: "liveactivity", payload: #"{"aps":{"event":"end","timestamp":1774737600}}"#),
                push(tokens[3], quiet: "none"),
                push(tokens[4], quiet: "Europe/London=23:00-08:00"),
            ])
        }
        var policy = QueuePolicy()
        policy.quietHours = try QuietHours(parsing: "Europe/Amsterdam=22:00-07:00", field: "quietHours")
        let clock = try Self.utc("2026-03-28T22:40:00Z")
        policy.now = { clock }
        let sent = try await PushQueueStore.withStore(url: url, connections: 2) { store in
            let claim = try await store.claim(owner: "w-quiet", limit: 10, lease: 30, maxAttempts: 3)
            return try await store.admit(claim.rows, policy: policy, owner: "w-quiet")
        }
        // 22:40 in London is outside its 23:00 window: the row's own window wins over the worker's.
        #expect(sent.map(\.deviceToken) == [tokens[1], tokens[2], tokens[3], tokens[4]])
        let rows = try await Q.rows(
            pg, database,
            "state, coalesce(reason, '-'), to_char(not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), attempts, history->0->>'outcome'"
        )
        #expect(rows[0] == ["scheduled", "quiet-hours", "2026-03-29 05:00", "0", "scheduled"])
        #expect(rows[1...].allSatisfy { $0[0] == "leased" })
    }

    @Test("Across the autumn change, and queue status shows what waits for quiet hours until when")
    func claimDefersAcrossFallBackAndStatusShowsIt() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await Q.insert([TestTokens.random()], url: url)
        var policy = QueuePolicy()
        policy.quietHours = try QuietHours(parsing: "Europe/Amsterdam=22:00-07:00", field: "quietHours")
        let autumn = try Self.utc("2026-10-24T21:40:00Z")
        policy.now = { autumn }
        _ = try await PushQueueStore.withStore(url: url, connections: 2) { store in
            let claim = try await store.claim(owner: "w-autumn", limit: 1, lease: 30, maxAttempts: 3)
            return try await store.admit(claim.rows, policy: policy, owner: "w-autumn")
        }
        let autumnRows = try await Q.rows(
            pg, database, "state, reason, to_char(not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')")
        #expect(autumnRows == [["scheduled", "quiet-hours", "2026-10-25 06:00:00"]])
        // That time is behind the database's clock: the row is sent (made final here); a second row claimed at
        // 23:40 tomorrow night, local, waits for a time still ahead of it.
        _ = try await pg.runSQL("UPDATE public.kkpush_push_queue SET state = 'accepted'", database: database)
        try await Q.insert([TestTokens.random()], url: url)
        let tomorrow = Date().addingTimeInterval(86_400)
        var local = LocalTime.components(of: tomorrow, in: Self.amsterdam)
        (local.hour, local.minute, local.second) = (23, 40, 0)
        let night = LocalTime.resolve(local, in: Self.amsterdam)
        policy.now = { night }
        _ = try await PushQueueStore.withStore(url: url, connections: 2) { store in
            let claim = try await store.claim(owner: "w-night", limit: 1, lease: 30, maxAttempts: 3)
            return try await store.admit(claim.rows, policy: policy, owner: "w-night")
        }
        let end = try #require(policy.quietHours?.end(containing: night))
        let formatter = ISO8601DateFormatter()
        let report = try await PushQueueStore.statusReport(url: url)
        #expect(report.status.counts["scheduled"] == 1 && report.status.counts["accepted"] == 1)
        #expect(
            report.status.waits == [
                QueueWait(
                    reason: "quiet-hours", rows: 1, earliest: formatter.string(from: end),
                    latest: formatter.string(from: end))
            ])
    }
}
