import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Synchronization
import Testing

@Suite("APNsClient batches, connection loss and HTTP/1.1")
struct APNsClientBatchTests {
    @Test("a mixed batch: exactly one outcome per notification, each of the right kind")
    func mixedBatchAccounting() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            var items: [PushBatchItem] = []
            var expected: [Int: String] = [:]
            for i in 0..<120 {
                let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
                var endpoint = server.sandboxEndpoint
                var request = ClientFixtures.request(device.token)
                switch i % 6 {
                case 0:
                    request.deviceToken = "zz\(i)"
                    expected[i] = "preflight"
                case 1:
                    try server.unregister(token: device.token)
                    expected[i] = "Unregistered"
                case 2:
                    endpoint = server.productionEndpoint
                    expected[i] = "BadDeviceToken"
                case 3:
                    try server.addFault(.failNext(1, status: 503, scope: .token(device.token)))
                    expected[i] = "accepted-retried"
                default:
                    expected[i] = "accepted"
                }
                items.append(PushBatchItem(request: request, endpoint: endpoint))
            }
            let collector = ResultCollector()
            await client.sendAll(items) { collector.add($0) }
            let results = collector.all
            #expect(results.count == items.count)
            #expect(Set(results.map(\.index)) == Set(0..<items.count))
            for result in results {
                let outcome = result.outcome
                switch expected[result.index] {
                case "preflight": #expect(outcome.failure?.kind == .preflight, "\(result.index) \(outcome)")
                case "Unregistered": #expect(outcome.rejection?.reason == .unregistered, "\(result.index) \(outcome)")
                case "BadDeviceToken":
                    #expect(outcome.rejection?.reason == .badDeviceToken, "\(result.index) \(outcome)")
                case "accepted-retried":
                    #expect(outcome.isAccepted, "\(result.index) \(outcome)")
                    #expect(outcome.attempts == 2)
                default:
                    #expect(outcome.isAccepted, "\(result.index) \(outcome)")
                    #expect(outcome.attempts == 1)
                }
                #expect(result.deviceToken == items[result.index].request.deviceToken)
            }
        }
    }

    @Test("a streamed batch through a small buffer: every item once, in bounded memory")
    func streamedBatch() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let count = 500
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let (stream, continuation) = AsyncStream.makeStream(of: PushBatchItem.self)
            let producer = Task {
                for _ in 0..<count { continuation.yield(item) }
                continuation.finish()
            }
            let collector = ResultCollector()
            try await client.sendAll(streaming: stream, bufferSize: 4) { collector.add($0) }
            await producer.value
            let results = collector.all
            #expect(results.count == count)
            #expect(Set(results.map(\.index)) == Set(0..<count))
            #expect(results.allSatisfy { $0.outcome.isAccepted })
            #expect(server.deliveries(token: device.token, limit: 10_000).count == count)
        }
    }

    @Test(
        "a streamed batch that ends at once (empty, or failing before any item) returns: the loop's finish and the wait never miss each other"
    )
    func streamedBatchEndsAtOnce() async throws {
        struct InputFailed: Error {}
        try await ClientFixtures.withMockAndClient { server, client in
            // 300 rounds of each, 5 s at most per round. Before one lock guarded both sides, a feed that finished
            // while the caller was between two locks left sendAll waiting for ever (send-batch hung under load on an
            // input error after skipped lines, and on an empty input). The window is a few instructions wide: this
            // loop passes with the old code on an idle machine too; it guards the path, not the interleaving.
            let hung = Mutex(0)
            for round in 0..<600 {
                let (stream, continuation) = AsyncThrowingStream.makeStream(of: PushBatchItem.self)
                if round.isMultiple(of: 2) {
                    continuation.finish()
                } else {
                    continuation.finish(throwing: InputFailed())
                }
                let returned = await withTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        do { try await client.sendAll(streaming: stream) { _ in } } catch {}
                        return true
                    }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(5))
                        return false
                    }
                    let first = await group.next() ?? false
                    group.cancelAll()
                    return first
                }
                if !returned { hung.withLock { $0 += 1 } }
                if hung.withLock({ $0 }) > 0 { break }
            }
            #expect(hung.withLock { $0 } == 0, "sendAll(streaming:) did not return for a batch that ended at once")
            _ = server
        }
    }

    @Test("a synchronous batch is read on the calling task, not on the client's loop thread")
    func synchronousBatchReadOffTheLoop() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let items = ThreadNotingItems(items: Array(repeating: item, count: 50))
            let collector = ResultCollector()
            await client.sendAll(items) { collector.add($0) }
            let results = collector.all
            #expect(results.count == 50)
            #expect(results.filter { !$0.outcome.isAccepted }.isEmpty)
            let names = items.names.withLock { $0 }
            #expect(!names.isEmpty)
            #expect(!names.contains("kkpush-curl"), "read on \(names.sorted())")
        }
    }

    @Test("GOAWAY mid-batch: the rest moves to a new connection, every push ends accepted exactly once")
    func goAwayMidBatch() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(
                MockFault(kind: .goAway(afterStreams: 40, reason: .shutdown), remaining: 2))
            let count = 400
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let collector = ResultCollector()
            await client.sendAll(repeatElement(item, count: count)) { collector.add($0) }
            let results = collector.all
            #expect(results.count == count)
            #expect(Set(results.map(\.index)) == Set(0..<count))
            let notAccepted = results.filter { !$0.outcome.isAccepted }
            #expect(notAccepted.isEmpty, "\(notAccepted.prefix(3).map(\.outcome))")
            let delivered = server.deliveries(token: device.token, limit: 10_000).count
            let duplicated = results.filter(\.outcome.possiblyDuplicated).count
            // Every accepted push was delivered; only those marked may have been delivered twice.
            #expect(delivered >= count)
            #expect(delivered <= count + duplicated)
        }
    }

    @Test("a client that shut down leaves no connection open")
    func shutdownClosesConnections() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let client = try APNsClient(configuration: try ClientFixtures.clientConfiguration(server))
            let outcome = await client.send(ClientFixtures.request(device.token), to: server.sandboxEndpoint)
            #expect(outcome.isAccepted)
            #expect(server.openConnections == 1)
            await client.shutdown()
            // The close reaches the mock asynchronously: wait for it (bounded: 30 s; a run of the suite in parallel
            // once took longer than 5 s).
            let deadline = ContinuousClock.now + .seconds(30)
            while server.openConnections > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.openConnections == 0)
        }
    }

    @Test("with write coalescing off, a batch goes through the same: one outcome each, all accepted")
    func uncoalescedBatch() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            var configuration = try ClientFixtures.clientConfiguration(server)
            configuration.coalesceWrites = false
            try await withAPNsClient(configuration: configuration) { client in
                let item = PushBatchItem(
                    request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
                let collector = ResultCollector()
                await client.sendAll(repeatElement(item, count: 300)) { collector.add($0) }
                #expect(collector.all.count == 300)
                #expect(collector.all.allSatisfy { $0.outcome.isAccepted })
            }
            #expect(server.deliveries(token: device.token, limit: 1000).count == 300)
        }
    }

    @Test("shutdown with pushes queued: each still gets exactly one outcome")
    func shutdownMidBatch() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            // The mock never answers: whenever the shutdown lands (before or after the batch reached the
            // loop, however busy the machine), no push can have an answer, and each must still get one outcome.
            try server.addFault(MockFault(kind: .stall))
            let client = try APNsClient(configuration: try ClientFixtures.clientConfiguration(server))
            let count = 1000
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let collector = ResultCollector()
            async let batch: Void = client.sendAll(repeatElement(item, count: count)) { collector.add($0) }
            // Shut down once the batch is under way (its connection reached the mock, which stalls it).
            var polls = 0
            while server.acceptedConnections == 0, polls < 1000 {
                polls += 1
                try await Task.sleep(for: .milliseconds(10))
            }
            await client.shutdown()
            await batch
            let results = collector.all
            #expect(results.count == count)
            #expect(Set(results.map(\.index)) == Set(0..<count))
            #expect(!results.contains { $0.outcome.isAccepted })
            // Every push ends `interrupted`; exactly the ones whose request had been sent (on the stalled
            // connection: how many depends on how far the batch got) say they may have reached the server.
            #expect(results.allSatisfy { $0.outcome.failure?.kind == .interrupted })
            for result in results {
                let sent = result.outcome.failure?.message.contains("APNs may have it") == true
                #expect(result.outcome.possiblyDuplicated == sent, "\(result.outcome)")
                // A push whose request went out names its connection; one never sent names none.
                #expect((result.outcome.connection != nil) == sent, "\(result.outcome)")
            }
        }
    }

    @Test("shutdown while a retry waits: the push ends interrupted, naming the connection its request went on")
    func shutdownDuringRetryWait() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(.failNext(1, status: 503))
            var configuration = try ClientFixtures.clientConfiguration(server)
            configuration.retry = APNsRetryPolicy(
                maxAttempts: 3, initialDelay: .seconds(60), maxDelay: .seconds(60), maxTotalTime: .seconds(120),
                jitter: 0)
            let client = try APNsClient(configuration: configuration)
            async let outcome = client.send(ClientFixtures.request(device.token), to: server.sandboxEndpoint)
            // The fault answered its one 503 (and is gone) and the retry waits its minute: shut down then.
            var polls = 0
            while !server.faults.isEmpty, polls < 1000 {
                polls += 1
                try await Task.sleep(for: .milliseconds(10))
            }
            try await Task.sleep(for: .milliseconds(100))
            await client.shutdown()
            let result = await outcome
            #expect(result.failure?.kind == .interrupted && result.attempts == 1, "\(result)")
            #expect(result.connection != nil, "\(result)")
        }
    }

    @Test("an HTTP/1.1-only TLS server is a clear http1 failure, even though it answers 200")
    func http1Server() async throws {
        let script = """
            import http.server, ssl, sys
            class H(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    n = int(self.headers.get('content-length') or 0)
                    self.rfile.read(n)
                    self.send_response(200); self.send_header('content-length', '0'); self.end_headers()
                def log_message(self, *a): pass
            s = http.server.HTTPServer(('127.0.0.1', 0), H)
            c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            c.load_cert_chain(sys.argv[1], sys.argv[2])
            c.set_alpn_protocols(['http/1.1'])
            s.socket = c.wrap_socket(s.socket, server_side=True)
            print(s.server_address[1], flush=True)
            s.handle_request()
            """
        let process = try BackgroundProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", script, ClientFixtures.path("server.crt"), ClientFixtures.path("server.key")])
        defer { process.send(SIGKILL) }
        let line = (await process.firstLine(timeout: 20) ?? "").trimmingWhitespace()
        let port = try #require(Int(line), "python printed '\(line)'")
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, caFile: ClientFixtures.path("ca.crt"))
        let configuration = APNsClientConfiguration(
            credential: .none, sandboxEndpoint: endpoint, productionEndpoint: endpoint, requestTimeout: .seconds(10),
            retry: ClientFixtures.fastRetry)
        let outcome = try await withAPNsClient(configuration: configuration) { client in
            await client.send(ClientFixtures.request(String(repeating: "ab", count: 32)), to: endpoint)
        }
        let failure = try #require(outcome.failure, "\(outcome)")
        #expect(failure.kind == .http1)
        #expect(failure.message.contains("HTTP/2"))
        #expect(outcome.attempts == 1)
    }
}

/// A batch that notes the kernel name of each thread it is read on.
private final class ThreadNotingItems: Sequence, Sendable {
    let items: [PushBatchItem]
    let names = Mutex<Set<String>>([])

    init(items: [PushBatchItem]) { self.items = items }

    func makeIterator() -> Iterator { Iterator(base: items.makeIterator(), owner: self) }

    struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[PushBatchItem]>
        let owner: ThreadNotingItems

        mutating func next() -> PushBatchItem? {
            let name = (try? kernelThreadName()) ?? "unreadable"
            owner.names.withLock { _ = $0.insert(name) }
            return base.next()
        }
    }
}
