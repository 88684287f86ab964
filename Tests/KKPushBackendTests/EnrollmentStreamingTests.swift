import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

/// `forEachEnrollment`: every store hands out every enrollment once, in the asked order, in batches of at most the
/// asked size (PostgreSQL through a server-side cursor, SQLite by keyset pagination, memory by slicing).
@Suite("Enrollment store streaming")
struct EnrollmentStreamingTests {
    /// Collects batches (the body is @Sendable).
    actor Batches {
        var batches: [[Enrollment]] = []
        func add(_ b: [Enrollment]) { batches.append(b) }
    }

    static func records() -> [Enrollment] {
        (0..<23).map { i in
            Enrollment(
                deviceID: "dev-\(String(format: "%02d", (i * 7) % 23))",
                tenantSlug: i % 3 == 0 ? "agovv" : "vvwilhelmus",
                teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: i % 2 == 0
                    ? "6F1C2A8E-0000-4000-8000-0000000000\(String(format: "%02d", i % 5))"
                    : "6f1c2a8e-0000-4000-8000-0000000000\(String(format: "%02d", i % 4))",
                apnsToken: i % 4 == 0 ? nil : BackendFixtures.token(i % 6 + 1),
                teamManagerEmail: i % 3 == 1 ? nil : (i % 2 == 0 ? "Jan\(i % 4)@example.nl" : "jan\(i % 4)@example.nl"),
                updatedAt: EnrollmentStorageTests.t0)
        }
    }

    @Test("Every enrollment once, in order, in bounded batches", arguments: ["sqlite", "postgres", "memory"])
    func streams(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let records = Self.records()
        let run: @Sendable (any EnrollmentStore) async throws -> Void = { store in
            try await store.upsert(contentsOf: records)
            for order in [EnrollmentOrder.deviceID, .apnsToken, .hardwareIdentifier, .teamManagerEmail] {
                for tenant in [nil, "vvwilhelmus"] as [String?] {
                    let batches = Batches()
                    try await store.forEachEnrollment(orderedBy: order, tenant: tenant, batchSize: 4) {
                        await batches.add($0)
                    }
                    let got = await batches.batches
                    #expect(got.allSatisfy { !$0.isEmpty && $0.count <= 4 })
                    let expected = records.filter { tenant == nil || $0.tenantSlug == tenant }
                        .sorted { a, b in Self.precedes(a, b, order) }
                    #expect(
                        got.flatMap { $0 }.map { "\($0.tenantSlug)/\($0.deviceID)" }
                            == expected.map { "\($0.tenantSlug)/\($0.deviceID)" }, "\(kind) \(order) \(tenant ?? "-")")
                }
            }
        }
        switch kind {
        case "memory":
            try await run(InMemoryEnrollmentStore())
        case "sqlite":
            try await SQLiteEnrollmentStore.withStore(path: dir.appendingPathComponent("s.sqlite").path) {
                try await run($0)
            }
        default:
            let url = try await PostgresFixtures.migratedDatabase().url
            try await PostgresEnrollmentStore.withStore(url: url) { try await run($0) }
            // Read-only (the audit's way): the cursor runs in a read-only transaction.
            try await PostgresEnrollmentStore.withStore(url: url, readOnly: true) { store in
                let count = Batches()
                try await store.forEachEnrollment(orderedBy: .apnsToken, tenant: nil, batchSize: 10) {
                    await count.add($0)
                }
                #expect(await count.batches.map(\.count) == [10, 10, 3])
            }
        }
    }

    @Test("The sync throttle's last sync is kept by the store, across a reopen", arguments: ["sqlite", "postgres"])
    func syncTimes(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let location =
            kind == "sqlite"
            ? EnrollmentStoreLocation(kind: .sqlite(path: dir.appendingPathComponent("s.sqlite").path), origin: "--db")
            : EnrollmentStoreLocation(
                kind: .postgres(try await PostgresFixtures.migratedDatabase().url), origin: "--db")
        let at = EnrollmentStorageTests.t0.addingTimeInterval(0.25)
        try await EnrollmentStores.withStore(location) { store in
            let none = try await store.lastSync(hardwareIdentifier: BackendFixtures.phoneA)
            #expect(none == nil)
            try await store.recordSync(hardwareIdentifier: BackendFixtures.phoneA, at: at)
            try await store.recordSync(hardwareIdentifier: BackendFixtures.phoneB, at: at)
            try await store.recordSync(hardwareIdentifier: BackendFixtures.phoneB, at: nil)
        }
        let (a, b) = try await EnrollmentStores.withStore(location) { store in
            (
                try await store.lastSync(hardwareIdentifier: BackendFixtures.phoneA.lowercased()),
                try await store.lastSync(hardwareIdentifier: BackendFixtures.phoneB)
            )
        }
        #expect(a == at && b == nil)
        let memory = InMemoryEnrollmentStore()
        await memory.recordSync(hardwareIdentifier: BackendFixtures.phoneA, at: at)
        #expect(await memory.lastSync(hardwareIdentifier: BackendFixtures.phoneA.lowercased()) == at)
    }

    /// The documented order: the key (enrollments without it last), then device id, then tenant.
    static func precedes(_ a: Enrollment, _ b: Enrollment, _ order: EnrollmentOrder) -> Bool {
        func key(_ e: Enrollment) -> String? {
            switch order {
            case .deviceID: e.deviceID
            case .apnsToken: e.apnsToken
            case .hardwareIdentifier: e.hardwareIdentifier.lowercased()
            case .teamManagerEmail: e.teamManagerEmail?.lowercased()
            }
        }
        switch (key(a), key(b)) {
        case (nil, .some): return false
        case (.some, nil): return true
        case (.some(let x), .some(let y)) where x != y: return x < y
        default: return (a.deviceID, a.tenantSlug) < (b.deviceID, b.tenantSlug)
        }
    }
}
