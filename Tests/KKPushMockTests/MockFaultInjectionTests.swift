import Foundation
import KKPushCore
import KKPushMock
import Testing

@Suite("Fault injection")
struct MockFaultInjectionTests {
    @Test("429/500/503 for the next N requests, then normal", arguments: [429, 500, 503])
    func failNext(status: Int) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(.failNext(2, status: status))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send(
                (0..<3).map { _ in Curl.push(server.sandboxEndpoint, token: token, authorization: jwt) })
            #expect(responses.map(\.status) == [status, status, 200])
            let expected =
                status == 429 ? "TooManyRequests" : status == 500 ? "InternalServerError" : "ServiceUnavailable"
            #expect(responses[0].reason == expected)
            #expect(server.faults.isEmpty)
        }
    }

    @Test("skip lets the first N matching requests pass, then the fault applies")
    func skip() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            var fault = MockFault.failNext(1, status: 503)
            fault.skip = 2
            try server.addFault(fault)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send(
                (0..<4).map { _ in Curl.push(server.sandboxEndpoint, token: token, authorization: jwt) })
            #expect(responses.map(\.status) == [200, 200, 503, 200])
            #expect(server.faults.isEmpty)
            let decoded = try JSONDecoder().decode(
                MockFault.self, from: Data(#"{"kind":"close","skip":5,"count":1}"#.utf8))
            #expect(decoded.skip == 5)
            var negative = MockFault(kind: .stall)
            negative.skip = -1
            let e = #expect(throws: KKPushError.self) { try server.addFault(negative) }
            #expect(e?.code.rawValue == "mock-fault-skip")
        }
    }

    @Test("A fixed answer per token and per topic, until removed")
    func scoped() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let a = Fixtures.randomToken()
            let b = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(a), kind: .respond(status: 503, reason: .shutdown)))
            let topicFault = try server.addFault(
                MockFault(scope: .topic("com.other.app"), kind: .respond(status: 400, reason: .topicDisallowed)))
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: a, authorization: jwt),
                Curl.push(server.sandboxEndpoint, token: b, authorization: jwt),
                Curl.push(server.sandboxEndpoint, token: a, authorization: jwt),
                Curl.push(server.sandboxEndpoint, token: b, authorization: jwt, topic: "com.other.app"),
            ])
            #expect(responses.map(\.status) == [503, 200, 503, 400])
            #expect(responses[0].reason == "Shutdown")
            #expect(responses[3].reason == "TopicDisallowed")
            server.removeFaults(id: topicFault.id)
            #expect(server.faults.count == 1)
            server.removeFaults()
            #expect(try await Curl.one(Curl.push(server.sandboxEndpoint, token: a, authorization: jwt)).status == 200)
        }
    }

    @Test("A delay postpones the answer")
    func delay() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(MockFault(kind: .delay(milliseconds: 400), remaining: 1))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let started = ContinuousClock.now
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
            let elapsed = ContinuousClock.now - started
            #expect(r.status == 200)
            #expect(elapsed >= .milliseconds(400))
        }
    }

    @Test("GOAWAY after N streams: the client moves to a new connection")
    func goAway() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(MockFault(kind: .goAway(afterStreams: 2, reason: .shutdown), remaining: 1))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            var requests = (0..<3).map { _ in Curl.push(server.sandboxEndpoint, token: token, authorization: jwt) }
            requests[2].extra = ["-v"]
            let (responses, result) = try await Curl.send(requests)
            #expect(responses.map(\.status) == [200, 200, 200])
            #expect(responses.map(\.newConnection) == [true, false, true])
            #expect(server.faults.isEmpty)
            #expect(result.stderr.contains("GOAWAY") || responses[2].newConnection)
        }
    }

    @Test("An abrupt close: the client gets no answer; the next connection works")
    func close() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(MockFault(kind: .closeConnection, remaining: 1))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let push = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt)
            let (responses, result) = try await Curl.send([push])
            #expect(responses.first?.status == 0)
            #expect(result.status != 0)
            #expect(try await Curl.one(push).status == 200)
        }
    }

    @Test("A stall: nothing is answered; the client times out")
    func stall() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(MockFault(kind: .stall, remaining: 1))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let push = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt)
            // On a loaded machine curl's 2 s can run out before its request reaches the mock (a series run once: the
            // stall then took the next push, which timed out after 30 s). So the stalled push is sent until the
            // fault is used up (at most 5 times), waiting up to 2 s after each for a request still on its way.
            var attempts = 0
            repeat {
                attempts += 1
                let (responses, result) = try await Curl.send([push], maxTime: 2)
                #expect(responses.first?.status == 0)
                #expect(result.status == 28)  // curl: operation timed out
                let waited = ContinuousClock.now
                while !server.faults.isEmpty, ContinuousClock.now - waited < .seconds(2) {
                    try await Task.sleep(for: .milliseconds(50))
                }
            } while !server.faults.isEmpty && attempts < 5
            try #require(server.faults.isEmpty, "no push reached the stall in \(attempts) attempts")
            #expect(server.deliveries().isEmpty)
            let after = try await Curl.one(push)
            #expect(after.status == 200, "curl: \(after.body)")
        }
    }

    @Test("Faults from the configuration; bad faults are rejected with the field named")
    func configured() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.faults = [.failNext(1, status: 500)]
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let r = try await Curl.one(
                Curl.push(server.productionEndpoint, token: Fixtures.randomToken(), authorization: jwt))
            #expect(r.status == 500)
            #expect(r.reason == "InternalServerError")
            let e1 = #expect(throws: KKPushError.self) {
                try server.addFault(MockFault(kind: .respond(status: 99, reason: .shutdown)))
            }
            #expect(e1?.code.rawValue == "mock-fault-status")
            let e2 = #expect(throws: KKPushError.self) {
                try server.addFault(MockFault(kind: .respond(status: 503, reason: APNsReason("a\"b"))))
            }
            #expect(e2?.code.rawValue == "mock-fault-reason")
            let e3 = #expect(throws: KKPushError.self) { try server.addFault(MockFault(kind: .stall, remaining: 0)) }
            #expect(e3?.code.rawValue == "mock-fault-count")
        }
    }
}
