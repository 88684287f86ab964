import Foundation

/// How many pushes a loop that follows the server's streams keeps in flight
/// (``APNsClientConfiguration/sizesInFlightToRoundTrip``): enough to cover the round trip at the rate the loop
/// actually sends, with headroom, between a floor and the loop's capacity (the server's streams within the memory
/// budget).
///
/// Why: at a distance the round trip limits a connection (streams ÷ round trip a second), so the server's 1,000
/// streams are needed; next to the server they only cost CPU, since libcurl 7.88 walks every transfer it holds on
/// every turn of the loop (on loopback the defaults sent about 30,000 pushes a second at 32 µs of CPU each with
/// 2,000 in flight, and 46,000 at 22 µs with 100). The window starts at the capacity, as before, and follows
/// what the loop measures:
/// - the round trip: the shortest time from a request's send to its answer, over the last 10 to 20 s (a
///   windowed minimum, so that a path that got longer is learnt);
/// - the rate: answers a second over a sample of at least 10 ms and two round trips, counted only when pushes
///   waited for room at the end of every turn of it (a sample in which the work ran out says how much work there
///   was, not what the window allows: it leaves the window as it is).
///
/// The window is then `headroom` × rate × round trip + `floor`, within `floor…capacity`. Limited by the window,
/// the rate is at most window ÷ round trip, so the next window is at most `headroom` times this one: it grows by
/// half a window per sample while the round trip is the limit, and settles at about 1.5 × the pushes a round
/// trip takes when the CPU is (client and server then have all the answers they can handle). The numbers are
/// kkpush's choices: a floor of 100 (the old default, and the best of 100, 200 and 300 on loopback), headroom
/// 1.5 (room for the rate to grow without waiting a sample).
struct InFlightWindow {
    /// The fewest pushes the window allows (or the capacity, if that is smaller).
    static let floor = 100
    /// The window over the pushes one round trip takes at the measured rate.
    static let headroom = 1.5
    /// The shortest rate sample.
    static let minimumSampleNanos: UInt64 = 10_000_000
    /// How long a round-trip minimum is kept: the shortest answer of this period and the last is the round trip.
    static let roundTripPeriodNanos: UInt64 = 10_000_000_000

    let capacity: Int
    /// The pushes the loop may keep in flight now.
    private(set) var current: Int
    /// The round trip the last update used, nanoseconds.
    private(set) var roundTripNanos: UInt64?
    /// The answers a second of the last sample that updated the window.
    private(set) var rate: Double?

    private var shortestThisPeriod = UInt64.max
    private var shortestLastPeriod = UInt64.max
    private var periodStart: UInt64
    private var sampleStart: UInt64?
    private var sampleAnswers = 0
    private var sampleLimited = true

    init(capacity: Int, now: UInt64) {
        self.capacity = capacity
        current = capacity
        periodStart = now
    }

    /// An answer came `latency` nanoseconds after its request was sent.
    mutating func answered(latency: UInt64, now: UInt64) {
        if now &- periodStart >= Self.roundTripPeriodNanos {
            shortestLastPeriod = shortestThisPeriod
            shortestThisPeriod = .max
            periodStart = now
        }
        shortestThisPeriod = min(shortestThisPeriod, max(latency, 1))
        sampleAnswers += 1
    }

    /// The end of a turn of the loop at `now`. `limited`: pushes waited for room in the window.
    mutating func turnEnded(now: UInt64, limited: Bool) {
        guard let start = sampleStart else {
            startSample(now, limited: limited)
            return
        }
        if !limited { sampleLimited = false }
        let roundTrip = min(shortestThisPeriod, shortestLastPeriod)
        guard roundTrip != .max else { return }
        let elapsed = now &- start
        guard elapsed >= max(Self.minimumSampleNanos, 2 &* roundTrip) else { return }
        defer { startSample(now, limited: limited) }
        guard sampleLimited, sampleAnswers > 0 else { return }
        let measured = Double(sampleAnswers) * 1e9 / Double(elapsed)
        rate = measured
        roundTripNanos = roundTrip
        current = Self.size(rate: measured, roundTripNanos: roundTrip, capacity: capacity)
    }

    private mutating func startSample(_ now: UInt64, limited: Bool) {
        sampleStart = now
        sampleAnswers = 0
        sampleLimited = limited
    }

    /// The window for `rate` answers a second over a round trip of `roundTripNanos`: `headroom` × the pushes one
    /// round trip takes, plus `floor`, within `floor…capacity`.
    static func size(rate: Double, roundTripNanos: UInt64, capacity: Int) -> Int {
        let perRoundTrip = rate * Double(roundTripNanos) / 1e9
        let wanted = (headroom * perRoundTrip).rounded(.up)
        let bounded = min(Double(capacity), wanted + Double(floor))
        return max(min(floor, capacity), Int(bounded))
    }
}
