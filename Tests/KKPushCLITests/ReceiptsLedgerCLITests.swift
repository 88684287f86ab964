import Foundation
import KKPushBackend
import KKPushCore
import KKPushMock
import KKPushTestSupport
import KantineKoning
import Testing

@testable import KKPushCLI

/// `kkpush receipts --ledger --receipts`: a real send-batch run against the mock writes the ledger, the app's
/// receipts are posted over HTTP (curl) to the simulated backend, and the join gives the queue's report.
@Suite("kkpush receipts --ledger")
struct ReceiptsLedgerCLITests {
    static let topic = "nl.kantinekoning.app"
    static let key = "Certificates/AuthKey_KKTEST0001.p8"

    /// Posts `body` as the receipt of the enrollment `jwt` over HTTP; the HTTP status and answer.
    static func post(_ backend: SimulatedBackend, jwt: String, _ body: String) async throws -> (Int, String) {
        try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(jwt)", "--data", body,
            backend.baseURL + PushReceipt.path,
        ])
    }

    @Test("A send-batch ledger joined with the backend's receipts: by apns-id, by kk_push_id, the silent token named")
    func ledgerJoin() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-receipts-ledger")
        defer { try? FileManager.default.removeItem(at: dir) }
        try await withMockServer(configuration: .forTests()) { server in
            let devices = (0..<3).map { _ in server.mintDevice(environment: .sandbox, topic: Self.topic).token }
            // Line 2 carries its own payload with the backend's push id; lines 1 and 3 get the batch's alert.
            let tokensPath = dir.appendingPathComponent("tokens.txt").path
            try
                ([
                    devices[0],
                    #"{"token": "\#(devices[1])", "payload": {"aps": {"content-available": 1}, "kk_push_id": "dienst-42"}}"#,
                    devices[2],
                ].joined(separator: "\n") + "\n").write(toFile: tokensPath, atomically: true, encoding: .utf8)
            let batch = try await CLI.run([
                "send-batch", "--tokens", tokensPath, "--topic", Self.topic, "--url", server.sandboxEndpoint.baseURL,
                "--ca-file", try #require(server.caFile), "--env", "sandbox", "--key", Self.key, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--title", "Dienst",
            ])
            #expect(batch.status == 0, "\(batch.stderr)")
            let ledgerPath = dir.appendingPathComponent("ledger.jsonl").path
            try batch.stdout.write(toFile: ledgerPath, atomically: true, encoding: .utf8)
            let results = try batch.stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let apnsID0 = try #require(results.first { $0["index"] as? Int == 1 }?["apns_id"] as? String)

            let receiptsPath = dir.appendingPathComponent("receipts.json").path
            try await withSimulatedBackend(
                configuration: SimulatedBackendConfiguration(port: 0, secret: ReceiptsCommandTests.secret)
            ) { backend in
                let jwt0 = try await ReceiptsCommandTests.enroll(
                    backend, phone: "8C2D6F0E-6A57-4D52-9B43-2F0C1E7A9B10", token: devices[0])
                let jwt1 = try await ReceiptsCommandTests.enroll(
                    backend, phone: "3B9A1C44-0D2E-4F6A-8B7C-5E1D2A3F4B60", token: devices[1])
                let now = Enrollment.formatDate(Date())
                // Device 0's Notification Service Extension: by apns-id, in upper case (iOS spells it so).
                let (s0, a0) = try await Self.post(
                    backend, jwt: jwt0,
                    #"{"apns_id": "\#(apnsID0.uppercased())", "received_at": "\#(now)", "handled": "shown", "handler": "service-extension", "app_version": "2.4.0", "build": "240"}"#
                )
                #expect(s0 == 200, "\(a0)")
                // Device 1's background handler: by the payload's push id only.
                let (s1, a1) = try await Self.post(
                    backend, jwt: jwt1,
                    #"{"push_id": "dienst-42", "received_at": "\#(now)", "handled": "refreshed", "handler": "background-handler", "app_version": "2.4.0", "build": "240"}"#
                )
                #expect(s1 == 200, "\(a1)")
                // A receipt of a push this run did not send.
                let (s2, a2) = try await Self.post(
                    backend, jwt: jwt1,
                    #"{"apns_id": "\#(UUID().uuidString)", "received_at": "\#(now)", "handled": "shown"}"#)
                #expect(s2 == 200, "\(a2)")
                let (listed, text) = try await StoreConcurrencyCLITests.curl([backend.baseURL + "/admin/receipts"])
                #expect(listed == 200, "\(text)")
                try String(text.split(separator: "\n").dropLast().joined(separator: "\n"))
                    .write(toFile: receiptsPath, atomically: true, encoding: .utf8)
            }

            let base = ["receipts", "--ledger", ledgerPath, "--receipts", receiptsPath, "--tokens", tokensPath]
            let r = try await CLI.run(base + ["--grace", "0", "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let object = try r.json()
            let totals = try #require(object["totals"] as? [String: Int])
            #expect(totals["accepted"] == 3 && totals["received"] == 2 && totals["handled"] == 2, "\(totals)")
            #expect(totals["refreshed"] == 1 && totals["shown"] == 1 && totals["not_received"] == 1, "\(totals)")
            #expect(object["unmatched_receipts"] as? Int == 1 && object["receipts_seen"] as? Bool == true)
            let groups = try #require(object["groups"] as? [[String: Any]])
            let versioned = try #require(groups.first { $0["app_version"] as? String == "2.4.0" })
            #expect(versioned["received"] as? Int == 2 && versioned["app_build"] as? String == "240")
            #expect(versioned["push_type"] as? String == "alert" && versioned["priority"] as? Int == 10)
            #expect(versioned["environment"] as? String == "sandbox", "\(versioned)")
            let silent = try #require(object["never_received"] as? [[String: Any]])
            #expect(silent.compactMap { $0["device_token"] as? String } == [devices[2]])

            let text = try await CLI.run(base + ["--grace", "0"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("accepted but never received (1 token"), "\(text.stdout)")
            #expect(text.stdout.contains(devices[2]) && text.stdout.contains("1 receipt matched no push"))

            // Within the grace: the silent push is awaiting, and no token is named yet.
            let early = try await CLI.run(base + ["--grace", "3600", "--json"])
            let earlyObject = try early.json()
            #expect((earlyObject["totals"] as? [String: Int])?["awaiting"] == 1, "\(early.stdout)")
            #expect((earlyObject["never_received"] as? [Any])?.isEmpty == true)

            // Without --tokens the push id is unknown: device 1's receipt matches nothing.
            let noIDs = try await CLI.run(["receipts", "--ledger", ledgerPath, "--receipts", receiptsPath, "--json"])
            let noIDsObject = try noIDs.json()
            #expect(noIDsObject["unmatched_receipts"] as? Int == 2, "\(noIDs.stdout)")
            #expect((noIDsObject["totals"] as? [String: Int])?["received"] == 1)

            // JSON lines of receipts as the app posts them (no device token): one push carries dienst-42, so it
            // matches.
            let linesPath = dir.appendingPathComponent("receipts.jsonl").path
            try
                (#"{"push_id": "dienst-42", "received_at": "\#(Enrollment.formatDate(Date()))", "handled": "refreshed"}"#
                + "\n").write(toFile: linesPath, atomically: true, encoding: .utf8)
            let lines = try await CLI.run(
                ["receipts", "--ledger", ledgerPath, "--receipts", linesPath, "--tokens", tokensPath, "--json"])
            let linesObject = try lines.json()
            #expect((linesObject["totals"] as? [String: Int])?["refreshed"] == 1, "\(lines.stdout)\(lines.stderr)")
            #expect(linesObject["unmatched_receipts"] as? Int == 0)
        }
    }

    @Test("Bad ledgers and receipts files are named with their line; the flags are checked")
    func badInput() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-receipts-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ text: String) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let id = UUID().uuidString.lowercased()
        let good = try file(
            "ledger.jsonl",
            #"{"index": 1, "token": "\#(String(repeating: "ab", count: 32))", "status": "accepted", "apns_id": "\#(id)", "environment": "sandbox"}"#
                + "\n")
        let receipts = try file(
            "receipts.jsonl",
            #"{"apns_id": "\#(id)", "received_at": "2026-01-01T00:00:00Z", "handled": "shown"}"# + "\n")

        let notJSON = try file("bad-ledger.jsonl", try String(contentsOfFile: good, encoding: .utf8) + "index 2\n")
        let r1 = try await CLI.run(["receipts", "--ledger", notJSON, "--receipts", receipts, "--json"])
        let said1 = r1.stdout + r1.stderr
        #expect(r1.status == 2 && said1.contains("ledger-invalid"), "\(said1)")
        #expect(said1.contains("Line 2 of the ledger --ledger \(notJSON)"), "\(said1)")

        let noID = try file("no-id.jsonl", #"{"index": 1, "token": "ab", "status": "accepted", "apns_id": null}"#)
        let r2 = try await CLI.run(["receipts", "--ledger", noID, "--receipts", receipts])
        #expect(r2.status == 2 && r2.stderr.contains("Line 1 of the ledger"), "\(r2.stderr)")
        #expect(r2.stderr.contains("no apns_id"), "\(r2.stderr)")

        let badHandled = try file(
            "bad-receipts.jsonl",
            try String(contentsOfFile: receipts, encoding: .utf8)
                + #"{"apns_id": "\#(id)", "received_at": "2026-01-01T00:00:00Z", "handled": "opened"}"# + "\n")
        let r3 = try await CLI.run(["receipts", "--ledger", good, "--receipts", badHandled, "--json"])
        let said3 = r3.stdout + r3.stderr
        #expect(r3.status == 2 && said3.contains("receipt-invalid"), "\(said3)")
        #expect(said3.contains("line 2 of --receipts \(badHandled)") && said3.contains("'opened'"), "\(said3)")

        let badList = try file("bad-list.json", #"{"receipts": [{"received_at": "2026-01-01T00:00:00Z"}]}"#)
        let r4 = try await CLI.run(["receipts", "--ledger", good, "--receipts", badList])
        #expect(r4.status == 2 && r4.stderr.contains("receipts[0] of --receipts"), "\(r4.stderr)")

        let missing = dir.appendingPathComponent("absent.jsonl").path
        let r5 = try await CLI.run(["receipts", "--ledger", missing, "--receipts", receipts])
        #expect(r5.status != 0 && r5.stderr.contains("--ledger \(missing)"), "\(r5.stderr)")

        let alone = try await CLI.run(["receipts", "--ledger", good])
        #expect(alone.status == 64 && alone.stderr.contains("--ledger and --receipts go together"), "\(alone.stderr)")
        let both = try await CLI.run(["receipts", "--ledger", good, "--receipts", receipts, "--db", "postgres://u@h/d"])
        #expect(both.status == 64 && both.stderr.contains("--db and --ledger"), "\(both.stderr)")
        let type = try await CLI.run(["receipts", "--ledger", good, "--receipts", receipts, "--push-type", "sms"])
        #expect(type.status == 64 && type.stderr.contains("--push-type 'sms'"), "\(type.stderr)")
        let stray = try await CLI.run(["receipts", "--db", "postgres://u@127.0.0.1:1/x", "--push-id", "x"])
        #expect(stray.status == 64 && stray.stderr.contains("are for --ledger"), "\(stray.stderr)")

        // The good pair: one push, received and shown; every receipt matched.
        let ok = try await CLI.run(["receipts", "--ledger", good, "--receipts", receipts])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("total: 1 accepted, 1 received, 1 handled (0 refreshed, 1 shown)"), "\(ok.stdout)")
        #expect(ok.stdout.contains("every receipt matched a push of the ledger"))
    }
}
