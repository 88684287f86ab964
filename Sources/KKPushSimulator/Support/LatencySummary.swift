package import Foundation

/// The distribution of push-to-refresh latencies: from the push's acceptance at the mock APNs
/// server to the app's refreshed `upcoming` list. Percentiles by the nearest-rank method.
package struct LatencySummary: Sendable, Hashable {
    /// How many latencies.
    package var count: Int
    /// Milliseconds: median.
    package var p50: Double
    /// Milliseconds: 90th percentile.
    package var p90: Double
    /// Milliseconds: 99th percentile.
    package var p99: Double
    /// Milliseconds: the largest.
    package var max: Double
    /// Milliseconds: the smallest.
    package var min: Double
    /// Milliseconds: the mean.
    package var mean: Double

    /// Summarises latencies given in seconds (an empty list gives zeros).
    package init(seconds: [TimeInterval]) {
        let ms = seconds.map { $0 * 1000 }.sorted()
        count = ms.count
        func rank(_ p: Double) -> Double {
            guard !ms.isEmpty else { return 0 }
            let index = Int((p * Double(ms.count)).rounded(.up)) - 1
            return ms[Swift.max(0, Swift.min(ms.count - 1, index))]
        }
        p50 = rank(0.50)
        p90 = rank(0.90)
        p99 = rank(0.99)
        max = ms.last ?? 0
        min = ms.first ?? 0
        mean = ms.isEmpty ? 0 : ms.reduce(0, +) / Double(ms.count)
    }
}
