import Foundation
import KKPushMock
import Testing

/// `kkpush bench` and its fault matrix, run as the real binary.
@Suite("kkpush bench and bench faults (the real binary)")
struct BenchFaultsCLITests {
    /// The faults where today's client keeps both invariants (one result per push, no unflagged
    /// duplicate) in runs of a few hundred pushes.
    static let passingFaults = [
        "clean", "delay", "429", "500", "503", "goaway", "close", "reset", "stall", "restart", "expired-token",
        "wrong-environment",
    ]

    @Test("bench -n 250 -c 1: one connection past NIO's old 200-reset limit, every push accepted")
    func benchOneAtATime() async throws {
        try await withMockServer { server in
            let ca = try #require(server.caFile)
            let payload = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-bench-\(UUID()).json")
            try Data(#"{"aps":{"alert":"bench"}}"#.utf8).write(to: payload)
            defer { try? FileManager.default.removeItem(at: payload) }
            let result = try await CLI.run([
                "bench", "--url", server.sandboxEndpoint.baseURL, "--ca-file", ca, "--token", String(repeating: "ab", count: 32),
                "-n", "250", "-c", "1", "--payload", payload.path,
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--topic", "nl.kantinekoning.app",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("250 sent, 250 accepted"))
            #expect(server.acceptedConnections == 1)
            #expect(server.deliveries(limit: 1000).count == 250)
        }
    }

    @Test("bench faults: every push has one result and no duplicate is unflagged, for each fault")
    func matrix() async throws {
        let count = 300
        let result = try await CLI.run(
            ["bench", "faults", "--count", String(count), "--faults", Self.passingFaults.joined(separator: ","),
             "--request-timeout", "1", "--json"],
            timeout: 240)
        let json = try result.json()
        let rows = try #require(json["faults"] as? [[String: Any]])
        #expect(rows.compactMap { $0["fault"] as? String } == Self.passingFaults)
        for row in rows {
            let fault = row["fault"] as? String ?? "?"
            #expect(row["pushes"] as? Int == count, "\(fault)")
            #expect(row["results"] as? Int == count, "\(fault): \(row)")
            #expect(row["without_one_result"] as? Int == 0, "\(fault): \(row)")
            #expect(row["unflagged_duplicates"] as? Int == 0, "\(fault): \(row)")
            #expect(row["note"] is NSNull, "\(fault): \(row)")
            let accepted = row["accepted"] as? Int ?? -1
            let rejected = row["rejected"] as? Int ?? -1
            let failed = row["failed"] as? Int ?? -1
            #expect(accepted + rejected + failed == count, "\(fault)")
            switch fault {
            case "clean", "delay":
                #expect(accepted == count, "\(fault): \(row)")
                #expect(row["retried"] as? Int == 0, "\(fault): \(row)")
            case "429", "500", "503", "expired-token":
                // The fault answered some pushes; the client retried them.
                #expect((row["retried"] as? Int ?? 0) > 0, "\(fault): \(row)")
                #expect(accepted == count, "\(fault): \(row)")
            case "wrong-environment":
                #expect(rejected == count, "\(fault): \(row)")
                #expect(row["retried"] as? Int == 0, "\(fault): \(row)")
            default:
                break
            }
        }
        #expect(json["ok"] as? Bool == true)
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test("bench faults rejects an unknown fault, naming the choices")
    func unknownFault() async throws {
        let result = try await CLI.run(["bench", "faults", "--faults", "clean,meteor"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("meteor"))
        #expect(result.stderr.contains("wrong-environment"))
    }
}
