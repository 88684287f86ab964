import Foundation
import KKPushBackend
import KKPushStore
import KKPushTestSupport

/// The PostgreSQL side of the store tests: a fresh database on the test process's shared server
/// (``PostgresServer/shared()``), migrated, and a store on it.
enum PostgresFixtures {
    /// A new migrated database: its URL.
    static func migratedDatabase() async throws -> (server: PostgresServer, database: String, url: PostgresURL) {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let url = try PostgresURL(parsing: server.url(database))
        _ = try await PostgresEnrollmentStore.migrate(url: url)
        return (server, database, url)
    }

    /// A store on a new migrated database, and how to close it.
    static func store() async throws -> (PostgresEnrollmentStore, close: @Sendable () async -> Void) {
        let (_, _, url) = try await migratedDatabase()
        let store = try await PostgresEnrollmentStore.open(url: url)
        return (store, { await store.close() })
    }
}
