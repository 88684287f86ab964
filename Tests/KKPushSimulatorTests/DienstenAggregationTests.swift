import Foundation
import KKPushBackend
import KKPushSimulator
import Testing

@Suite("Client-side aggregation of diensten: dedup by id, future first")
struct DienstenAggregationTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        /// Per response: (id, days from now).
        var responses: [[(String, Double)]]
        var expectedOrder: [String]
        var expectedDuplicates: Int
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "future soonest first, then past most recent first",
            responses: [[("past-far", -200), ("future-late", 40), ("past-near", -1), ("future-soon", 3)]],
            expectedOrder: ["future-soon", "future-late", "past-near", "past-far"], expectedDuplicates: 0),
        Case(
            name: "the same dienst from two enrollments is kept once",
            responses: [[("a", 3), ("b", -5)], [("a", 3), ("c", 10)], [("b", -5)]],
            expectedOrder: ["a", "c", "b"], expectedDuplicates: 2),
        Case(
            name: "equal start times order by id",
            responses: [[("z", 7), ("m", 7)], [("a", 7)]],
            expectedOrder: ["a", "m", "z"], expectedDuplicates: 0),
        Case(
            name: "a dienst starting now counts as future",
            responses: [[("earlier", -0.01), ("now", 0)]],
            expectedOrder: ["now", "earlier"], expectedDuplicates: 0),
        Case(name: "no responses", responses: [], expectedOrder: [], expectedDuplicates: 0),
    ]

    @Test("merge", arguments: cases)
    func merge(_ c: Case) {
        let lists = c.responses.map { list in
            list.map { SimulatorFixtures.dienst($0.0, days: $0.1, now: Self.now) }
        }
        let merged = DienstenAggregation.merge(lists, now: Self.now)
        #expect(merged.diensten.map(\.id) == c.expectedOrder)
        #expect(merged.duplicatesRemoved == c.expectedDuplicates)
        #expect(Set(merged.diensten.map(\.id)).count == merged.diensten.count)
    }

    @Test("latency percentiles by nearest rank")
    func percentiles() {
        let seconds = (1...100).map { Double($0) / 1000 }
        let summary = LatencySummary(seconds: seconds.shuffled())
        #expect(summary.count == 100)
        #expect(abs(summary.p50 - 50) < 1e-9)
        #expect(abs(summary.p90 - 90) < 1e-9)
        #expect(abs(summary.p99 - 99) < 1e-9)
        #expect(abs(summary.max - 100) < 1e-9)
        #expect(LatencySummary(seconds: []).count == 0)
    }
}
