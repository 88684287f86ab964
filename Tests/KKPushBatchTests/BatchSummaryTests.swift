import Foundation
import Testing

@testable import KKPushBatch

/// send-batch's summary as KKPushBatch makes it: the counts and the rate, with stable field names.
@Suite("The batch summary")
struct BatchSummaryTests {
    @Test("Counts, time and rate: every field named, reasons sorted most first")
    func summary() throws {
        var counts = BatchLedger.Counts()
        counts.accepted = 7
        counts.rejected = ["BadDeviceToken": 1, "Unregistered": 2]
        counts.failed = ["bad-input": 1]
        counts.duplicated = 1
        counts.otherShard = 3
        let summary = BatchSummary(counts: counts, elapsed: .milliseconds(500))
        #expect(summary.seconds == 0.5 && summary.perSecond == 22)
        #expect(BatchSummary.byCount(counts.rejected).map(\.key) == ["Unregistered", "BadDeviceToken"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any])
        #expect(object["pushes"] as? Int == 11 && object["accepted"] as? Int == 7)
        #expect((object["rejected"] as? [String: Int]) == ["BadDeviceToken": 1, "Unregistered": 2])
        #expect(object["possibly_duplicated"] as? Int == 1 && object["other_shard"] as? Int == 3)
        #expect(object["per_second"] as? Double == 22)
        // No time, no rate (not a division by zero).
        #expect(BatchSummary(counts: counts, elapsed: .zero).perSecond == 0)
    }
}
