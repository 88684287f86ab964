import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@testable import KKPushClient

/// The pushes a client keeps in flight when it follows the server's streams: sized to the round trip and the rate it
/// measures (`InFlightWindow`), between 100 and its capacity. The rule on made-up clocks first, then the client
/// against the mock over TLS, near (loopback) and at a distance (every answer delayed).
@Suite("APNsClient in flight: sized to the round trip")
struct InFlightWindowTests {
    static let ms: UInt64 = 1_000_000

    /// Feeds `window` answers at `rate` a second, each `roundTrip` ns after its send, for `seconds`, with a turn
    /// per answer; `limited`: pushes wait for room at every turn.
    static func run(
        _ window: inout InFlightWindow, from start: UInt64, rate: Double, roundTrip: UInt64, seconds: Double,
        limited: Bool = true
    ) -> UInt64 {
        let step = UInt64(1e9 / rate)
        var now = start
        for _ in 0..<Int(rate * seconds) {
            now += step
            window.answered(latency: roundTrip, now: now)
            window.turnEnded(now: now, limited: limited)
        }
        return now
    }

    @Test("the window is 1.5 x the pushes a round trip takes at the rate, plus 100, within 100 and the capacity")
    func size() {
        #expect(InFlightWindow.size(rate: 20_000, roundTripNanos: 50 * Self.ms, capacity: 2048) == 1600)
        #expect(InFlightWindow.size(rate: 27_000, roundTripNanos: 20 * Self.ms, capacity: 2048) == 910)
        #expect(InFlightWindow.size(rate: 45_000, roundTripNanos: Self.ms / 3, capacity: 2048) == 123)
        #expect(InFlightWindow.size(rate: 20_000, roundTripNanos: 100 * Self.ms, capacity: 2048) == 2048)
        #expect(InFlightWindow.size(rate: 0, roundTripNanos: 50 * Self.ms, capacity: 2048) == 100)
        #expect(InFlightWindow.size(rate: 1_000_000, roundTripNanos: 50 * Self.ms, capacity: 40) == 40)
        #expect(InFlightWindow.size(rate: 0, roundTripNanos: 50 * Self.ms, capacity: 40) == 40)
    }

    @Test("near the server it shrinks from the capacity; at 50 ms it keeps what the round trip needs")
    func nearAndFar() {
        var near = InFlightWindow(capacity: 2048, now: 0)
        #expect(near.current == 2048)
        _ = Self.run(&near, from: 0, rate: 40_000, roundTrip: Self.ms / 2, seconds: 0.2)
        #expect(near.current == 130, "\(near.current)")
        #expect(near.rate.map { abs($0 - 40_000) < 1_000 } == true, "\(String(describing: near.rate))")

        var far = InFlightWindow(capacity: 2048, now: 0)
        _ = Self.run(&far, from: 0, rate: 20_000, roundTrip: 50 * Self.ms, seconds: 1)
        #expect(far.current == 1600, "\(far.current)")
        #expect(far.roundTripNanos == 50 * Self.ms)
    }

    @Test("a sample in which the work ran out leaves the window as it is (no shrinking to a lull)")
    func demandLimitedSamplesAreIgnored() {
        var window = InFlightWindow(capacity: 2048, now: 0)
        let now = Self.run(&window, from: 0, rate: 20_000, roundTrip: 50 * Self.ms, seconds: 1)
        #expect(window.current == 1600)
        // A trickle of 50 a second for 5 s with nothing waiting: the window stays.
        _ = Self.run(&window, from: now, rate: 50, roundTrip: 50 * Self.ms, seconds: 5, limited: false)
        #expect(window.current == 1600, "\(window.current)")
    }

    @Test("limited by the window, it grows by up to half a window per sample while the round trip is the limit")
    func growsWhileTheRoundTripLimits() {
        var window = InFlightWindow(capacity: 2048, now: 0)
        // A lull measured at 1,000 a second: 175.
        var now = Self.run(&window, from: 0, rate: 1_000, roundTrip: 50 * Self.ms, seconds: 1)
        #expect(window.current == 175, "\(window.current)")
        // Then the window is the limit: the rate is the window per round trip, and the window follows it up.
        var seen = [window.current]
        for _ in 0..<12 {
            now = Self.run(
                &window, from: now, rate: Double(window.current) / 0.05, roundTrip: 50 * Self.ms, seconds: 0.1)
            seen.append(window.current)
        }
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 }, "\(seen)")
        #expect(window.current == 2048, "\(seen)")
    }

    @Test("the round trip is the shortest answer of the last 10 to 20 s: a longer path is learnt")
    func roundTripIsWindowed() {
        var window = InFlightWindow(capacity: 100_000, now: 0)
        var now = Self.run(&window, from: 0, rate: 10_000, roundTrip: Self.ms, seconds: 1)
        #expect(window.roundTripNanos == Self.ms)
        now = Self.run(&window, from: now, rate: 10_000, roundTrip: 80 * Self.ms, seconds: 25)
        #expect(window.roundTripNanos == 80 * Self.ms, "\(String(describing: window.roundTripNanos))")
        #expect(window.current == 1300, "\(window.current)")
    }

    @Test("against the mock: near, the client keeps far fewer than the capacity in flight; every push one outcome")
    func clientNearTheServer() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            // 12,000 single sends at once: they wait in the loop's queue, so the window, not the work, limits what is
            // in flight for most of the run (a batch's producer can fall behind the loop on a loaded machine, and a
            // sample in which the work ran out does not move the window; with 4,000, one run in eleven of a loaded
            // parallel suite ended with the queue drained before a whole sample had been limited).
            let tokens = (0..<12_000).map { _ in
                server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic).token
            }
            let accepted = await withTaskGroup(of: Bool.self) { group in
                for token in tokens {
                    group.addTask {
                        await client.send(ClientFixtures.request(token), to: server.sandboxEndpoint).isAccepted
                    }
                }
                var n = 0
                for await ok in group where ok { n += 1 }
                return n
            }
            #expect(accepted == 12_000)
            let usage = client.usage
            let capacity = APNsClientConfiguration().budgetStreams
            // On loopback a round trip is well under 10 ms whatever the load: 1.5 x rate x round trip stays far
            // below the 2,048 streams of the budget.
            #expect(usage.inFlightWindow >= 100 && usage.inFlightWindow < capacity / 2, "\(usage)")
        }
    }

    @Test("against the mock: an explicit maxInFlightPerConnection, or sizing off, keeps the whole capacity")
    func explicitCapIsExact() async throws {
        try await ClientFixtures.withMockAndClient(client: { _, c in c.maxInFlightPerConnection = 300 }) {
            server, client in
            await ServerStreamsTests.sendAccepted(3000, server: server, client: client)
            #expect(client.usage.inFlightWindow == 300 * 2, "\(client.usage)")
        }
        try await ClientFixtures.withMockAndClient(client: { _, c in c.sizesInFlightToRoundTrip = false }) {
            server, client in
            await ServerStreamsTests.sendAccepted(3000, server: server, client: client)
            #expect(client.usage.inFlightWindow == APNsClientConfiguration().budgetStreams, "\(client.usage)")
        }
    }
}
