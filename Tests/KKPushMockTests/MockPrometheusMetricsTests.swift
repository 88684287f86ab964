import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Prometheus
import Testing

/// The mock's `GET /metrics` (admin API): what each metric counts, per mock, against real requests.
@Suite("The mock's Prometheus metrics")
struct MockPrometheusMetricsTests {
    static func scrape(_ server: MockAPNsServer, bearer: String? = nil) async throws -> PrometheusExposition {
        let answer = try await MetricsScrape.get(try #require(server.adminURL) + "/metrics", bearer: bearer)
        #expect(answer.status == 200, "\(answer.body)")
        #expect(answer.contentType == "text/plain; version=0.0.4; charset=utf-8")
        return try answer.exposition()
    }

    @Test("Answers by environment, status and reason; token refusals; faults; per mock, not per process")
    func counts() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { other in
                let jwt = try Fixtures.token(issuedAt: clock.now())
                try server.addFault(MockFault(kind: .respond(status: 503, reason: .serviceUnavailable), remaining: 2))
                let token = Fixtures.randomToken()
                let endpoint = server.sandboxEndpoint
                let (responses, _) = try await Curl.send(
                    (0..<5).map { _ in Curl.push(endpoint, token: token, authorization: jwt) })
                #expect(responses.map(\.status) == [503, 503, 200, 200, 200])
                let (sandbox, production) = (server.sandboxEndpoint, server.productionEndpoint)
                // Refused provider tokens: none, then a bad one (a new connection each).
                #expect(
                    try await Curl.one(Curl.push(production, token: token, authorization: nil))
                        .status == 403)
                #expect(
                    try await Curl.one(Curl.push(production, token: token, authorization: "not.a.jwt")).status
                        == 403)
                #expect(
                    try await Curl.one(Curl.push(production, token: token, authorization: jwt))
                        .status == 200)
                try server.addFault(MockFault(kind: .closeConnection, remaining: 1))
                #expect(
                    try await Curl.one(Curl.push(sandbox, token: token, authorization: jwt)).status
                        == 0)

                let m = try await Self.scrape(server)
                let requests = "kkpush_mock_requests_total"
                #expect(m.sum(requests, matching: ["environment": "sandbox", "status": "200", "reason": ""]) == 3)
                #expect(
                    m.sum(
                        requests, matching: ["environment": "sandbox", "status": "503", "reason": "ServiceUnavailable"])
                        == 2)
                #expect(m.sum(requests, matching: ["environment": "production", "status": "200", "reason": ""]) == 1)
                #expect(
                    m.sum(
                        requests,
                        matching: ["environment": "production", "status": "403", "reason": "MissingProviderToken"])
                        == 1)
                #expect(
                    m.sum(
                        requests,
                        matching: ["environment": "production", "status": "403", "reason": "InvalidProviderToken"])
                        == 1)
                // The accepted answers are the delivery log, per environment.
                #expect(server.deliveries().filter { $0.environment == .sandbox }.count == 3)
                #expect(server.deliveries().filter { $0.environment == .production }.count == 1)
                let tokens = "kkpush_mock_provider_tokens_total"
                // One verification per connection that used the token: the sandbox one and the production one.
                #expect(m.value(tokens, ["result": "verified", "reason": ""]) == 2)
                #expect(m.value(tokens, ["result": "rejected", "reason": "MissingProviderToken"]) == 1)
                #expect(m.value(tokens, ["result": "rejected", "reason": "InvalidProviderToken"]) == 1)
                #expect(m.value("kkpush_mock_faults_fired_total", ["fault": "respond"]) == 2)
                #expect(m.value("kkpush_mock_faults_fired_total", ["fault": "close"]) == 1)
                #expect(m.value("kkpush_mock_faults_fired_total", ["fault": "delay"]) == 0)
                #expect(m.value("kkpush_mock_request_duration_seconds_count", ["environment": "sandbox"]) == 5)
                #expect(m.value("kkpush_mock_request_duration_seconds_count", ["environment": "production"]) == 3)
                for family in m.families {
                    #expect(m.helps[family]?.isEmpty == false)
                    if m.types[family] == "counter" { #expect(family.hasSuffix("_total")) }
                }
                // Label values never carry a device token, a provider token or an apns-id.
                let text = server.metrics.registry.emitToString()
                #expect(!text.contains(token))
                #expect(!text.contains(jwt))

                // The other mock in this process counted nothing.
                let o = try await Self.scrape(other)
                #expect(o.sum(requests) == 0)
                #expect(o.sum(tokens) == 0)

                // POST /reset empties the log; counters only go up.
                server.reset()
                let again = try await Self.scrape(server)
                #expect(again.sum(requests) == m.sum(requests))
            }
        }
    }

    @Test("GOAWAY faults count when the GOAWAY is sent; connections and streams go back to 0")
    func goAwayAndGauges() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            try server.addFault(MockFault(kind: .goAway(afterStreams: 2, reason: .shutdown), remaining: 1))
            let token = Fixtures.randomToken()
            let endpoint = server.sandboxEndpoint
            let sent = ContinuousClock.now
            let (responses, result) = try await Curl.send(
                (0..<3).map { _ in Curl.push(endpoint, token: token, authorization: jwt) })
            // What curl saw, for a failure below (a connection still counted open after 10 s came twice in 15 runs of
            // the whole suite in parallel, never alone; not explained yet).
            let curlSide =
                "curl: exit \(result.status)\(result.timedOut ? " (killed at its time limit)" : "") after "
                + "\(ContinuousClock.now - sent), statuses \(responses.map(\.status)), new connection "
                + "\(responses.map(\.newConnection)); stderr: \(result.stderr)"
            var m = try await Self.scrape(server)
            #expect(m.value("kkpush_mock_faults_fired_total", ["fault": "goaway"]) == 1)
            // curl has exited; the mock counts its connections closed once it reads their end. Up to 10 s for that
            // (50 scrapes, about 2.5 s, once fell short on a loaded machine, with one connection still counted).
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .seconds(10) {
                m = try await Self.scrape(server)
                if m.sum("kkpush_mock_open_connections") == 0 && m.sum("kkpush_mock_open_streams") == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(m.sum("kkpush_mock_open_connections") == 0, "\(curlSide)")
            #expect(m.sum("kkpush_mock_open_streams") == 0, "\(curlSide)")
        }
    }

    @Test("push_type and priority labels after a mixed batch: Apple's breakdowns on bounded label sets")
    func pushTypeAndPriorityLabels() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let endpoint = server.sandboxEndpoint
            let topic = Fixtures.topic
            let background = #"{"aps":{"content-available":1}}"#
            let widgets = #"{"aps":{"content-changed":true}}"#
            let requests = [
                Curl.push(endpoint, token: token, authorization: jwt, headers: ["apns-priority: 10"]),
                Curl.push(endpoint, token: token, authorization: jwt, headers: ["apns-priority: 10"]),
                Curl.push(
                    endpoint, token: token, authorization: jwt, pushType: "background",
                    headers: ["apns-priority: 5"], body: background),
                Curl.push(
                    endpoint, token: token, authorization: jwt, topic: topic + ".push-type.widgets",
                    pushType: "widgets", headers: ["apns-priority: 5"], body: widgets),
                Curl.push(
                    endpoint, token: token, authorization: jwt, topic: topic + ".push-type.controls",
                    pushType: "controls", body: widgets),
                Curl.push(endpoint, token: token, authorization: jwt, pushType: nil),
                Curl.push(endpoint, token: token, authorization: jwt, pushType: "x-made-up-\(UUID())"),
                Curl.push(endpoint, token: token, authorization: jwt, headers: ["apns-priority: 7"]),
            ]
            let (responses, _) = try await Curl.send(requests)
            #expect(responses.count == requests.count)
            let m = try await Self.scrape(server)
            let name = "kkpush_mock_requests_total"
            #expect(m.sum(name) == Double(requests.count))
            for series in m.series(name) where series.value > 0 {
                #expect(PushMetricLabels.pushTypes.contains(series.labels["push_type"] ?? "?"), "\(series)")
                #expect(PushMetricLabels.priorities.contains(series.labels["priority"] ?? "?"), "\(series)")
            }
            #expect(m.sum(name, matching: ["push_type": "alert", "priority": "10", "status": "200"]) == 2)
            #expect(m.sum(name, matching: ["push_type": "background", "priority": "5", "status": "200"]) == 1)
            #expect(m.sum(name, matching: ["push_type": "widgets", "priority": "5"]) == 1)
            #expect(m.sum(name, matching: ["push_type": "controls", "priority": "none"]) == 1)
            #expect(m.sum(name, matching: ["push_type": "none", "priority": "none"]) == 1)
            #expect(m.sum(name, matching: ["push_type": "other", "status": "400", "reason": "InvalidPushType"]) == 1)
            #expect(m.sum(name, matching: ["push_type": "alert", "priority": "other", "status": "400"]) == 1)
            // Every label pair is there from the start for accepted requests (zero until counted).
            #expect(
                m.series(name, matching: ["status": "200", "environment": "sandbox"]).count
                    == PushMetricLabels.pushTypes.count * PushMetricLabels.priorities.count)
        }
    }

    @Test("/metrics is behind the admin API's guards: the admin token, no Origin")
    func guarded() async throws {
        var configuration = Fixtures.configuration()
        configuration.adminToken = "metrics-admin-token-1234"
        try await withMockServer(configuration: configuration) { server in
            let url = try #require(server.adminURL) + "/metrics"
            #expect(try await MetricsScrape.get(url).status == 401)
            #expect(try await MetricsScrape.get(url, bearer: "wrong").status == 401)
            let m = try await Self.scrape(server, bearer: "metrics-admin-token-1234")
            #expect(m.types["kkpush_mock_requests_total"] == "counter")
            let admin = Admin(base: try #require(server.adminURL))
            let fromPage = try await admin.call(
                "GET", "/metrics",
                headers: ["Authorization: Bearer metrics-admin-token-1234", "Origin: http://example.com"]
            ).status
            #expect(fromPage == 403)
        }
    }

    @Test("The strict exposition reader refuses what a scraper would")
    func strictReader() throws {
        let good = """
            # HELP a_total A.
            # TYPE a_total counter
            a_total{x="1",y="q\\"uote"} 3
            # HELP h_seconds H.
            # TYPE h_seconds histogram
            h_seconds_bucket{le="0.5"} 1
            h_seconds_bucket{le="+Inf"} 2
            h_seconds_sum 1.5
            h_seconds_count 2

            """
        let parsed = try PrometheusExposition(parsing: good)
        #expect(parsed.value("a_total", ["x": "1", "y": "q\"uote"]) == 3)
        for bad in [
            "a_total 1\n",  // no TYPE
            "# TYPE a_total counter\na_total 1\n",  // no HELP
            "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\na_total{x=\"1\"} 2\n",  // duplicate
            "# HELP a_total A.\n# TYPE a_total counter\na_total one\n",  // value
            "# HELP a_total A.\n# TYPE a_total counter\na_total{x=1} 1\n",  // unquoted
            "# HELP a_total A.\n# TYPE a_total counter\na_total 1",  // no final newline
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        ] {
            #expect(throws: PrometheusExposition.ParseError.self) { try PrometheusExposition(parsing: bad) }
        }
    }
}
