import Foundation
import KKPushCore
import KKPushStore
import KKPushTestSupport
import Testing

@testable import KKPushQueue

/// The queue commands' reports, as KKPushQueue makes them: their JSON fields (`null` where a value is missing), their
/// text, the token file's lines, and the migration and status against a real PostgreSQL.
@Suite("The push queue's reports")
struct QueueReportTests {
    /// `value` encoded with sorted keys, read back as a dictionary.
    static func object(_ value: some Encodable) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try #require(try JSONSerialization.jsonObject(with: encoder.encode(value)) as? [String: Any])
    }

    @Test("enqueue: the count and the first and last ids, null when nothing was queued")
    func enqueueReport() throws {
        let none = try Self.object(QueueEnqueueReport(ids: []))
        #expect(none["enqueued"] as? Int == 0 && none["first_id"] is NSNull && none["last_id"] is NSNull)
        #expect(QueueEnqueueReport(ids: []).textLines == ["enqueued 0 pushes"])
        let three = QueueEnqueueReport(ids: [7, 8, 9])
        let object = try Self.object(three)
        #expect(object["first_id"] as? Int == 7 && object["last_id"] as? Int == 9 && object.count == 4)
        #expect(object["repeated"] as? Int == 0)
        #expect(three.textLines == ["enqueued 3 pushes (ids 7 to 9)"])
    }

    @Test("A worker's event: every count, the times to the millisecond, the rate over the busy time")
    func workerEvent() throws {
        var counts = QueueWorkerCounts()
        counts.accepted = 30
        counts.rejected = 2
        counts.reasons = ["BadDeviceToken": 2]
        counts.busySeconds = 1.23456
        let event = QueueWorkerEvent("stopped", worker: "w1", counts: counts, elapsed: .milliseconds(4321))
        let object = try Self.object(event)
        #expect(object["event"] as? String == "stopped" && object["worker"] as? String == "w1")
        #expect(object["elapsed_seconds"] as? Double == 4.321 && object["busy_seconds"] as? Double == 1.235)
        #expect(object["per_second"] as? Double == (32 / 1.23456).rounded())
        #expect((object["reasons"] as? [String: Int]) == ["BadDeviceToken": 2])
        let keys: Set<String> = [
            "event", "worker", "claimed", "reclaimed", "accepted", "rejected", "retry", "dead", "returned", "held",
            "deferred", "collapsed", "lease_lost", "possibly_duplicated", "in_flight", "reasons", "elapsed_seconds",
            "busy_seconds",
            "per_second",
        ]
        #expect(Set(object.keys) == keys)
        #expect(
            event.textLines == [
                "worker w1 stopped: 30 accepted, 2 rejected, 0 to retry, 0 dead, 0 returned, 0 held; 0 in flight; 26/s over 1.2 s busy of 4.3 s; 2 BadDeviceToken"
            ])
        counts.deferred = 5
        counts.collapsed = 1
        let held = QueueWorkerEvent("progress", worker: "w1", counts: counts, elapsed: .milliseconds(4321))
        #expect(try Self.object(held)["deferred"] as? Int == 5 && Self.object(held)["collapsed"] as? Int == 1)
        #expect(
            held.textLines.first?.contains("; 5 held back to wait (quiet hours, device cap, rate), 1 collapsed;")
                == true)
    }

    @Test("The token file's lines: hex tokens lowercased, blank and # lines skipped, a bad line named")
    func tokenLines() throws {
        let tokens = try PushQueueStore.tokenLines(Array("# tokens\nABCD\n\n  ef01  \n".utf8), source: "the file")
        #expect(tokens == ["abcd", "ef01"])
        let error = try #require(throws: KKPushError.self) {
            try PushQueueStore.tokenLines(Array("abcd\nnot-hex\n".utf8), source: "the file t.txt")
        }
        #expect(error.code == .queueTokenInvalid && error.code.kind == .input)
        #expect(error.message == "Line 2 of the file t.txt is not a hex device token.")
    }

    @Test("migrate, status and enqueue against PostgreSQL: what changed, the counts, the ids")
    func againstPostgres() async throws {
        let server = try await PostgresServer.sharedServer()
        let url = try PostgresURL(parsing: server.url(try await server.newDatabase("queue_reports")))
        let first = try await PushQueueSchema.migrateReport(url: url)
        #expect(first.changed && first.version == PushQueueSchema.latestVersion && !first.applied.isEmpty)
        #expect(first.textLines.last == "\(url.named): the push queue is at version \(first.version)")
        let second = try await PushQueueSchema.migrateReport(url: url)
        let secondObject = try Self.object(second)
        #expect(!second.changed && secondObject["changed"] as? Bool == false)
        #expect(second.textLines == ["\(url.named): nothing changed; the push queue is at version \(second.version)"])

        let empty = try await PushQueueStore.statusReport(url: url)
        #expect(empty.status.waiting == 0 && empty.warnings.isEmpty)
        #expect(try Self.object(empty)["oldest_waiting_seconds"] is NSNull)

        let push = QueueInsert(
            deviceToken: "", topic: "nl.kantinekoning.app", pushType: "alert", priority: 10,
            payload: #"{"aps":{"alert":"x"}}"#, environment: .sandbox)
        let enqueued = try await PushQueueStore.enqueueReport(
            url: url, tokens: Array("\(TestTokens.random())\n\(TestTokens.random())\n".utf8), source: "tokens",
            push: push)
        #expect(enqueued.ids.count == 2 && enqueued.ids[1] > enqueued.ids[0])
        let status = try await PushQueueStore.statusReport(url: url)
        let object = try Self.object(status)
        #expect(object["waiting"] as? Int == 2 && (object["counts"] as? [String: Int])?["queued"] == 2)
        #expect(object["oldest_waiting_seconds"] as? Double != nil)
    }
}
