import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import KantineKoning
import Prometheus
import Testing

/// The simulated backend's `GET /metrics`, scraped over HTTP after token updates and two fan-outs through
/// the real client to the real mock, and compared with what the backend answered.
@Suite("The backend's Prometheus metrics")
struct BackendPrometheusMetricsTests {
    @Test("Token updates by result, fan-out pushes by outcome and environment, latencies, store operations")
    func counts() async throws {
        try await withMockServer(configuration: EndToEndFanOutTests.mockConfiguration()) { mock in
            let phoneA = mock.mintDevice(environment: .production, topic: BackendFixtures.bundleID)
            let phoneB = mock.mintDevice(environment: .sandbox, topic: BackendFixtures.bundleID)
            try await withAPNsClient(configuration: try EndToEndFanOutTests.clientConfiguration(mock)) { client in
                let config = SimulatedBackendConfiguration(port: 0, secret: BackendFixtures.secret)
                try await withSimulatedBackend(configuration: config, sender: APNsClientPushSender(client: client)) {
                    backend in
                    let url = backend.baseURL + "/metrics"
                    let before = try await MetricsScrape.get(url)
                    #expect(before.status == 200)
                    #expect(before.contentType == "text/plain; version=0.0.4; charset=utf-8")
                    let empty = try before.exposition()
                    for family in [
                        "kkpush_backend_token_updates_total", "kkpush_backend_fanout_pushes_total",
                        "kkpush_backend_tokens_cleared_total", "kkpush_backend_push_duration_seconds",
                        "kkpush_backend_store_query_duration_seconds",
                    ] {
                        #expect(empty.types[family] != nil, "no TYPE for \(family)")
                        #expect(empty.helps[family]?.isEmpty == false, "no HELP for \(family)")
                    }
                    #expect(empty.sum("kkpush_backend_token_updates_total") == 0)

                    let (_, aJWT) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "vvwilhelmus", teams: ["JO11-3"], role: "manager",
                        phone: BackendFixtures.phoneA, email: "jan@example.nl")
                    let (_, bJWT) = try await BackendAppAPIOverHTTPTests.enroll(
                        backend, tenant: "vvwilhelmus", teams: ["JO11-3"], phone: BackendFixtures.phoneB)
                    try await EndToEndFanOutTests.tokenUpdate(
                        backend, jwt: aJWT, token: phoneA.token, build: "production", phone: BackendFixtures.phoneA)
                    try await EndToEndFanOutTests.tokenUpdate(
                        backend, jwt: bJWT, token: phoneB.token, build: "development", phone: BackendFixtures.phoneB)
                    // An invalid body (422) and no JWT at all (401).
                    let bad = try await HTTP.request(
                        "POST", backend.baseURL + TokenUpdate.path, bearer: aJWT, body: Data(#"{"token":"xyz"}"#.utf8))
                    #expect(bad.status == 422)
                    let anonymous = try await HTTP.request(
                        "POST", backend.baseURL + TokenUpdate.path, body: Data("{}".utf8))
                    #expect(anonymous.status == 401)

                    let first = try await HTTP.request(
                        "POST", backend.baseURL + "/admin/diensten/vvwilhelmus-jo11-3-5", json: ["title": "Bar"])
                    #expect(first.status == 200)
                    try mock.unregister(token: phoneA.token)
                    let second = try await HTTP.request(
                        "POST", backend.baseURL + "/admin/diensten/vvwilhelmus-jo11-3-5", json: ["title": "Kassa"])
                    let report = try #require(second.json["fan_out"] as? [String: Any])
                    #expect(report["accepted"] as? Int == 1 && report["rejected"] as? Int == 1)

                    let m = try await MetricsScrape.get(url).exposition()
                    let updates = "kkpush_backend_token_updates_total"
                    #expect(m.value(updates, ["result": "updated"]) == 2)
                    #expect(m.value(updates, ["result": "invalid"]) == 1)
                    #expect(m.value(updates, ["result": "unauthorized"]) == 1)
                    #expect(m.value(updates, ["result": "forbidden"]) == 0)
                    let pushes = "kkpush_backend_fanout_pushes_total"
                    #expect(m.value(pushes, ["outcome": "accepted", "environment": "production", "reason": ""]) == 1)
                    #expect(m.value(pushes, ["outcome": "accepted", "environment": "sandbox", "reason": ""]) == 2)
                    #expect(
                        m.value(pushes, ["outcome": "rejected", "environment": "production", "reason": "Unregistered"])
                            == 1)
                    #expect(m.sum(pushes, matching: ["outcome": "failed"]) == 0)
                    // The mock's own count of what the backend sent agrees.
                    #expect(
                        Double(mock.deliveries().count) == m.sum(pushes, matching: ["outcome": "accepted"]))
                    #expect(m.value("kkpush_backend_tokens_cleared_total") == 1)
                    #expect(m.sum("kkpush_backend_push_duration_seconds_count") == 4)
                    let store = "kkpush_backend_store_query_duration_seconds_count"
                    #expect(m.value(store, ["operation": "enroll"]) == 2)
                    #expect(m.value(store, ["operation": "update_token"]) == 2)
                    #expect(m.value(store, ["operation": "active_enrollments"]) == 2)
                    #expect(m.value(store, ["operation": "clear_token"]) == 1)
                    // Three token updates got as far as the enrollment lookup (the anonymous one did not).
                    #expect(m.value(store, ["operation": "get"]) == 3)
                    for family in m.families where m.types[family] == "counter" { #expect(family.hasSuffix("_total")) }
                    #expect(backend.metrics.registry.emitToString().contains("kkpush_backend_token_updates_total"))
                    #expect(!backend.metrics.registry.emitToString().contains(phoneA.token))
                }
            }
        }
    }

    @Test("/metrics is behind the admin guard: the admin token when one is set, no Origin")
    func guarded() async throws {
        let config = SimulatedBackendConfiguration(
            port: 0, secret: BackendFixtures.secret, adminToken: "backend-admin-token-5678")
        try await withSimulatedBackend(configuration: config) { backend in
            let url = backend.baseURL + "/metrics"
            #expect(try await MetricsScrape.get(url).status == 401)
            let ok = try await MetricsScrape.get(url, bearer: "backend-admin-token-5678")
            #expect(ok.status == 200)
            _ = try ok.exposition()
            let page = try await HTTP.request(
                "GET", url, bearer: "backend-admin-token-5678", headers: ["Origin": "http://x.example"])
            #expect(page.status == 403)
        }
    }
}
