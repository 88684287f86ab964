import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Synchronization
import Testing

/// `GET /log` and `GET /rejections` over real HTTP against the in-process mock, after real pushes over TLS: the
/// default page and what it says of the rest (`total`, `truncated`, `dropped`), paging forward and back by sequence
/// number (`after`, `before`) through every entry held, a log smaller than the run (its capacity configured), and
/// the query's errors.
@Suite("The admin API's delivery and rejection logs, paged")
struct MockLogPagingTests {
    /// Sends `count` pushes through the in-process client: the ones at `special` to `token`, the rest to new tokens.
    static func push(
        _ server: MockAPNsServer, count: Int, token: String, special: Set<Int>
    ) async throws -> [PushResult] {
        let (configuration, _) = try ClientSupport.configuration(server)
        let items = (0..<count).map {
            ClientSupport.item(server, special.contains($0) ? token : Fixtures.randomToken())
        }
        let results = Mutex<[PushResult]>([])
        try await withAPNsClient(configuration: configuration) { client in
            await client.sendAll(items) { r in results.withLock { $0.append(r) } }
        }
        return results.withLock { $0 }
    }

    static func sequences(_ body: [String: Any], _ key: String) -> [Int] {
        (body[key] as? [[String: Any]] ?? []).compactMap { $0["sequence"] as? Int }
    }

    /// Pages through `path` (a query without `after`) forward from `after=0`, `limit` at a time; the sequences read,
    /// each page's answer, in order. Bounded: at most `maximumPages` requests.
    static func pageForward(
        _ admin: Admin, _ path: String, key: String, limit: Int, maximumPages: Int = 200
    ) async throws -> (sequences: [Int], pages: [AdminResponse]) {
        var after = 0
        var read: [Int] = []
        var pages: [AdminResponse] = []
        for _ in 0..<maximumPages {
            let separator = path.contains("?") ? "&" : "?"
            let page = try await admin.call("GET", "\(path)\(separator)after=\(after)&limit=\(limit)")
            #expect(page.status == 200, "\(page.body) \(page.curl)")
            pages.append(page)
            read += sequences(page.body, key)
            after = try #require(page.body["next_after"] as? Int)
            if page.body["truncated"] as? Bool != true { break }
        }
        return (read, pages)
    }

    @Test("A run larger than the log: every entry held is paged through forward and back, and the drop is said")
    func pagingThroughTheLog() async throws {
        var configuration = Fixtures.configuration()
        configuration.deliveryLogCapacity = 1200
        configuration.rejectionLogCapacity = 50
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            // 1,500 pushes, 80 rejected by a fault, the last 70 of the others to one token.
            let token = Fixtures.randomToken()
            _ = try await admin.call(
                "POST", "/faults", json: #"{"kind":"respond","status":400,"reason":"BadDeviceToken","count":80}"#)
            let results = try await Self.push(server, count: 1580, token: token, special: Set(1510..<1580))
            #expect(results.count == 1580)
            #expect(results.filter(\.outcome.isAccepted).count == 1500)

            // The default page: the newest 1,000, and the word that there are more, and that 300 were dropped.
            let first = try await admin.call("GET", "/log")
            #expect(first.status == 200)
            #expect(Self.sequences(first.body, "notifications") == Array(501...1500))
            #expect(first.body["limit"] as? Int == 1000)
            #expect(first.body["total"] as? Int == 1200)
            #expect(first.body["truncated"] as? Bool == true)
            #expect(first.body["next_before"] as? Int == 501)
            #expect(first.body["next_after"] as? Int == 1500)
            #expect(first.body["oldest_sequence"] as? Int == 301)
            #expect(first.body["newest_sequence"] as? Int == 1500)
            #expect(first.body["capacity"] as? Int == 1200)
            #expect(first.body["dropped"] as? Int == 300)

            // Forward from the start: every entry held, once, in order; the first page says 300 were missed.
            let forward = try await Self.pageForward(admin, "/log", key: "notifications", limit: 128)
            #expect(forward.sequences == Array(301...1500))
            #expect(forward.pages.first?.body["missed"] as? Int == 300)
            #expect(forward.pages.count == 10)
            #expect(forward.pages.last?.body["truncated"] as? Bool == false)

            // Back from the newest: the same entries.
            var before: Int? = nil
            var back: [Int] = []
            for _ in 0..<50 {
                let page = try await admin.call("GET", "/log?limit=100" + (before.map { "&before=\($0)" } ?? ""))
                back = Self.sequences(page.body, "notifications") + back
                guard let next = page.body["next_before"] as? Int else { break }
                before = next
            }
            #expect(back == Array(301...1500))

            // A filter pages the same way; total counts what it matches.
            let mine = try await Self.pageForward(admin, "/log?token=\(token)", key: "notifications", limit: 16)
            #expect(mine.sequences.count == 70)
            #expect(mine.pages.allSatisfy { $0.body["total"] as? Int == 70 })
            #expect(Set(mine.sequences).count == 70)
            // A window: after and before together.
            let window = try await admin.call("GET", "/log?after=1000&before=1011&limit=5")
            #expect(Self.sequences(window.body, "notifications") == Array(1001...1005))
            #expect(window.body["truncated"] as? Bool == true)
            // Tailing: nothing after the newest, and the cursor stays.
            let tail = try await admin.call("GET", "/log?after=1500")
            #expect(Self.sequences(tail.body, "notifications").isEmpty)
            #expect(tail.body["next_after"] as? Int == 1500 && tail.body["truncated"] as? Bool == false)

            // Rejections: 80 made, 50 kept, said so; a limit above the capacity is no error.
            let rejections = try await admin.call("GET", "/rejections?limit=5000")
            #expect(rejections.status == 200, "\(rejections.body)")
            #expect(Self.sequences(rejections.body, "rejections") == Array(31...80))
            #expect(rejections.body["total"] as? Int == 50)
            #expect(rejections.body["truncated"] as? Bool == false)
            #expect(rejections.body["dropped"] as? Int == 30 && rejections.body["capacity"] as? Int == 50)
            let rejected = try await Self.pageForward(admin, "/rejections", key: "rejections", limit: 20)
            #expect(rejected.sequences == Array(31...80))
            #expect(rejected.pages.first?.body["missed"] as? Int == 30)

            // A dropped delivery is gone from its own endpoint too; a held one is there.
            #expect(try await admin.call("GET", "/deliveries/1/apns").status == 404)
            #expect(try await admin.call("GET", "/deliveries/301/apns").status == 200)
        }
    }

    @Test(
        "Query errors: a value out of range is said to be out of range, not 'not a number'",
        arguments: [
            ("/log?limit=0", "limit=0 is out of range: limit is from 1 to 100000."),
            ("/log?limit=200000", "limit=200000 is out of range: limit is from 1 to 100000."),
            ("/log?limit=abc", "limit=abc is not a whole number."),
            ("/log?after=-1", "after=-1 is out of range: after is 0 or more."),
            ("/rejections?before=x", "before=x is not a whole number."),
            ("/rejections?limit=0", "limit=0 is out of range: limit is from 1 to 100000."),
        ])
    func queryErrors(path: String, message: String) async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let r = try await admin.call("GET", path)
            #expect(r.status == 400, "\(r.curl)")
            let error = try #require(r.body["error"] as? [String: Any])
            #expect(error["code"] as? String == "admin-query")
            #expect(error["message"] as? String == message)
        }
    }

    @Test("A page larger than the socket's buffers reaches a Connection: close client whole")
    func largePageWithConnectionClose() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            // 3,000 pushes of about 4 KB: a page of them is some 12 MB of JSON.
            let padding = String(repeating: "k", count: 3900)
            let payload = Array(#"{"aps":{"alert":"x"},"pad":"\#(padding)"}"#.utf8)
            let items = (0..<3000).map { _ in
                PushBatchItem(
                    request: NotificationRequest(
                        deviceToken: Fixtures.randomToken(), topic: Fixtures.topic, pushType: .alert, priority: 10,
                        payload: payload),
                    endpoint: server.sandboxEndpoint)
            }
            let (configuration, _) = try ClientSupport.configuration(server)
            let accepted = Mutex(0)
            try await withAPNsClient(configuration: configuration) { client in
                await client.sendAll(items) { r in if r.outcome.isAccepted { accepted.withLock { $0 += 1 } } }
            }
            #expect(accepted.withLock { $0 } == 3000)
            let page = try await admin.call("GET", "/log?limit=3000", headers: ["Connection: close"])
            #expect(page.status == 200, "\(page.curl)")
            #expect(Self.sequences(page.body, "notifications") == Array(1...3000), "\(page.curl)")
            #expect(page.body["truncated"] as? Bool == false)
        }
    }

}
