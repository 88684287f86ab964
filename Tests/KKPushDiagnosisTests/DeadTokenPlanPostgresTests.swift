import Foundation
import KKPushDiagnosis
import KKPushStore
import KKPushTestSupport
import Testing

/// `token prune`'s engine on a real PostgreSQL table shaped as the app's backend makes it: the plan from APNs'
/// answers (`DeadTokenPlan`), then the guarded clear (`TokenRegistrations.clear`) skipping what changed in between.
/// The command (`kkpush token prune`: its plan, `--apply`, `--sql`, `--webhook`) is tested in KKPushCLITests
/// (TokenPruneCLITests).
@Suite("token prune's engine (PostgreSQL)")
struct DeadTokenPlanPostgresTests {
    typealias F = TokenPruneFixtures

    @Test("PostgreSQL: a token re-registered between the plan and --apply is skipped, and said so")
    func postgresRace() async throws {
        let server = try await PostgresServer.sharedServer()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ledgerPath, statePath) = try F.writeAnswers(dir)
        let database = try await F.pgFleetDatabase(server)
        let location = try EnrollmentStoreLocation.parse(server.url(database), origin: "test")
        var evidence = DeadTokenEvidenceSet()
        try evidence.readLedger(path: ledgerPath, label: "ledger")
        try evidence.readAuditState(path: statePath, label: "state")
        let plan = try await DeadTokenPlan.make(evidence: evidence, location: location, mapping: nil, batchSize: 2)
        #expect(Set(plan.dead.map(\.row.deviceID)) == ["dev-dead1", "dev-badboth"])
        // The app registers dev-dead1's token again after Apple's answer; dev-badboth's row goes away.
        try await server.runSQL(
            """
            UPDATE public.device_enrollments SET updated_at = '2027-02-01 08:00:00' WHERE device_id = 'dev-dead1';
            DELETE FROM public.device_enrollments WHERE device_id = 'dev-badboth';
            """, database: database)
        let before = try await F.dump(server, database)
        var clears = plan.dead.map(\.clear)
        // And a clear whose token the row no longer holds.
        clears.append(
            GuardedTokenClear(
                tenantSlug: "agovv", deviceID: "dev-alive", token: F.dead2,
                registeredBefore: Date(timeIntervalSince1970: 1_900_000_000), comment: "stale"))
        let report = try await TokenRegistrations.clear(clears, in: location, mapping: nil)
        #expect(report.cleared.isEmpty)
        let why = Dictionary(uniqueKeysWithValues: report.skipped.map { ($0.clear.deviceID, $0.why) })
        #expect(why["dev-badboth"] == .gone)
        #expect(why["dev-alive"] == .gone)  // dev-alive is vvwilhelmus's, not agovv's
        if case .reRegistered(let at) = why["dev-dead1"] {
            #expect(at == Date(timeIntervalSince1970: TimeInterval(F.ms("2027-02-01T08:00:00.000Z") / 1000)))
        } else {
            Issue.record("dev-dead1: \(String(describing: why["dev-dead1"]))")
        }
        #expect(try await F.dump(server, database) == before, "nothing written")
    }
}
