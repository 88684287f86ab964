public import Foundation

/// The distribution of push-to-refresh latencies: from the push's acceptance at the mock APNs
/// server to the app's refreshed `upcoming` list. Percentiles by the nearest-rank method.
public struct LatencySummary: Sendable, Hashable {
    /// How many latencies.
    public var count: Int
    /// Milliseconds: median.
    public var p50: Double
    /// Milliseconds: 90th percentile.
    public var p90: Double
    /// Milliseconds: 99th percentile.
    public var p99: Double
    /// Milliseconds: the largest.
    public var max: Double
    /// Milliseconds: the smallest.
    public var min: Double
    /// Milliseconds: the mean.
    public var mean: Double

    /// Summarises latencies given in seconds (an empty list gives zeros).
    public init(seconds: [TimeInterval]) {
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
