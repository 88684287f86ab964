import Foundation
import KKPushTestSupport
import Testing

/// `audit`'s output is the same for the same store in every run (Swift's dictionaries iterate in a different
/// order in each process: ties are broken by name), and `audit --json`'s error is one line of its JSON-lines
/// stream.
@Suite("audit: stable text, one-line JSON errors")
struct AuditOutputStabilityCLITests {
    @Test("Four processes, one store with ties everywhere: the same text each time")
    func sameTextEachRun() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/backend.sqlite"
        func hardware(_ n: Int) -> String { "6F1C2A8E-0000-4000-8000-00000000A00\(n)" }
        func token(_ n: Int) -> String { String(repeating: "a\(n)", count: 32) }
        // One tenant with one finding of each of several codes, and one routing group of each kind, one row each.
        try await BackendShapedSQLite.make(
            db,
            rows: [
                .init(device: "d1", hardware: hardware(1), token: nil),
                .init(device: "d2", status: "revoked", hardware: hardware(2), token: token(2)),
            ])
        try await BackendShapedSQLite.sqlite3(
            db,
            [("d3", "testing", 3), ("d4", "debug", 4), ("d5", "Production", 5), ("d6", "development", 6)].map {
                "INSERT INTO device_enrollments VALUES ('vvwilhelmus', '\($0.0)', '[\"JO11-3\"]', 'member', '\(hardware($0.2))', '\(token($0.2))', '\($0.1)', '1.4.2', 0, 'active', NULL, '2026-11-01T10:00:00Z');"
            }.joined())
        var outputs: Set<String> = []
        for _ in 0..<4 {
            let r = try await CLI.spawn(["audit", "--store", db])
            #expect(r.status == 1, "\(r.stderr)")
            // The first line holds the time taken.
            outputs.insert(r.stdout.split(separator: "\n").dropFirst().joined(separator: "\n"))
        }
        #expect(outputs.count == 1, "\(outputs.joined(separator: "\n-----\n"))")
    }

    @Test("audit --json: an error is one JSON line")
    func oneLineError() async throws {
        let r = try await CLI.run(["audit", "--store", "/nonexistent/backend.sqlite", "--json"])
        #expect(r.status == 2)
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stdout)")
        let object = try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any]
        #expect((object?["error"] as? [String: Any])?["code"] as? String == "store-missing")
    }
}
