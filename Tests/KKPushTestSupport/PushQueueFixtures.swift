import Foundation
import KKPushAuth
package import KKPushClient
package import KKPushCore
package import KKPushMock
package import KKPushQueue
package import KKPushStore
import Testing

/// The push queue in a real PostgreSQL server and a worker against the mock, as the queue's engine tests
/// (KKPushQueueTests) and `kkpush queue`/`worker`'s tests (KKPushCLITests) both set them up: a migrated database,
/// rows enqueued, a worker in this process that drains the queue, the rows read back through psql.
package enum PushQueueFixtures {
    package static let topic = "nl.kantinekoning.app"
    package static var key: String { Repository.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }
    package static let payload = #"{"aps":{"alert":{"title":"Dienst","body":"Je dienst is gewijzigd"}}}"#

    /// A fresh database with the queue migrated: its URL as text and parsed.
    package static func migratedDatabase() async throws -> (server: PostgresServer, name: String, url: PostgresURL) {
        let server = try await PostgresServer.sharedServer()
        let name = try await server.newDatabase("queue")
        let url = try PostgresURL(parsing: server.url(name))
        _ = try await PushQueueSchema.migrate(url: url)
        return (server, name, url)
    }

    /// A client for the mock's two listeners, with the repository's test key; `retry`: the client's own retries.
    package static func client(_ server: MockAPNsServer, retry: APNsRetryPolicy = .none) throws -> APNsClient {
        let key = try ES256PrivateKey(contentsOfFile: Self.key)
        var configuration = APNsClientConfiguration(
            credential: .token(ProviderTokenCache(key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001")))
        configuration.sandboxEndpoint = server.sandboxEndpoint
        configuration.productionEndpoint = server.productionEndpoint
        configuration.retry = retry
        return try APNsClient(configuration: configuration)
    }

    /// Alert rows for `tokens` in the sandbox, each with an enrollment id.
    package static func enqueue(_ tokens: [String], url: PostgresURL) async throws {
        let inserts = tokens.map {
            QueueInsert(
                deviceToken: $0, topic: topic, pushType: "alert", priority: 10, payload: payload,
                environment: .sandbox, enrollmentID: "enr-\($0.prefix(6))")
        }
        _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue(inserts) }
    }

    /// Alert rows for `tokens` in `environment`, without an enrollment id.
    package static func insert(_ tokens: [String], environment: APNsEnvironment = .sandbox, url: PostgresURL)
        async throws
    {
        let inserts = tokens.map {
            QueueInsert(
                deviceToken: $0, topic: topic, pushType: "alert", priority: 10, payload: payload,
                environment: environment)
        }
        _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue(inserts) }
    }

    /// A worker in this process that stops once the queue is empty.
    package static func drain(
        _ server: MockAPNsServer, url: PostgresURL, owner: String, lease: Double = 30, batch: Int = 50
    ) async throws -> QueueWorker.Ending {
        let store = PushQueueStore(url: url, connections: 3)
        let worker = QueueWorker(
            store: store, router: SingleClientRouter(client: try client(server)),
            configuration: QueueWorkerConfiguration(
                owner: owner, batchSize: batch, lanes: 2, lease: lease, maxAttempts: 3,
                backoff: .init(base: 0.05, maximum: 0.2), pollInterval: 0.2, exitWhenEmpty: true, grace: 5,
                progressInterval: 60))
        // Bounded: a worker that never empties the queue is stopped after 120 s (and the test fails below).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            Issue.record("worker \(owner) did not empty the queue in 120 s")
            worker.stop()
        }
        let ending = await worker.run()
        watchdog.cancel()
        await store.close()
        return ending
    }

    /// Rows as `token|state|...` lines through psql (not kkpush).
    package static func rows(_ server: PostgresServer, _ database: String, _ columns: String) async throws
        -> [[String]]
    {
        let text = try await server.runSQL(
            "SELECT \(columns) FROM public.kkpush_push_queue ORDER BY id", database: database)
        return text.split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
    }
}
