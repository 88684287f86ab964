import Foundation
import KKPushBackend
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

@testable import KKPushCLI

/// `kkpush receipts` end to end: pushes enqueued and drained by a worker against the mock, receipts posted by the
/// app to the simulated backend and recorded on their queue rows, and the report read from PostgreSQL.
@Suite("kkpush receipts")
struct ReceiptsCommandTests {
    typealias Q = PushQueueFixtures
    static let secret = "kkpush-test-secret-0123456789abcdef"

    /// Enrolls one device on the backend and registers `token`; its JWT.
    static func enroll(_ backend: SimulatedBackend, phone: String, token: String) async throws -> String {
        let enroll = await backend.router.handle(
            BackendRequest(
                method: "POST", target: "/admin/enrollments",
                body: Data(
                    #"{"tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "\#(phone)"}"#
                        .utf8)))
        let object = try #require(try JSONSerialization.jsonObject(with: enroll.body) as? [String: Any])
        let jwt = try #require(object["signed_device_token"] as? String)
        let update = await backend.router.handle(
            BackendRequest(
                method: "POST", target: "/api/mobile/v1/device/apns-token", authorization: "Bearer \(jwt)",
                body: Data(
                    #"{"token": "\#(token)", "bundle_id": "\#(Q.topic)", "build_environment": "development", "app_version": "2.4.0", "hardware_identifier": "\#(phone)"}"#
                        .utf8)))
        #expect(update.status == 200, "\(String(decoding: update.body, as: UTF8.self))")
        return jwt
    }

    @Test("Accepted vs received vs handled from the queue, and the token that accepts but never receives")
    func endToEnd() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let devices = (0..<3).map { _ in server.mintDevice(environment: .sandbox, topic: Q.topic) }
            // queue enqueue carries the backend's push id in the payload (--data kk_push_id=...).
            let enqueue = try await CLI.run(
                [
                    "queue", "enqueue", "--db", pg.url(database), "--tokens", "-", "--topic", Q.topic,
                    "--push-type", "background", "--priority", "5", "--content-available", "--data",
                    "kk_push_id=dienst-17",
                ], stdin: devices.map(\.token).joined(separator: "\n"))
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            #expect(try await Q.rows(pg, database, "push_id") == [["dienst-17"], ["dienst-17"], ["dienst-17"]])
            let ending = try await Q.drain(server, url: url, owner: "w-receipts")
            #expect(ending.emptied && ending.counts.accepted == 3)

            // Before any receipt: the report names no token (the app may post none at all).
            let none = try await CLI.run(["receipts", "--db", pg.url(database)])
            #expect(none.status == 0, "\(none.stderr)")
            #expect(none.stdout.contains("no receipts in this window"), "\(none.stdout)")

            // The app on device 0 posts its receipt to the backend, which records it on the queue row.
            let store = try await ReceiptsCommand.queueStore(pg.url(database))
            let clock = ManualWallClock(Date())
            try await withSimulatedBackend(
                configuration: SimulatedBackendConfiguration(port: 0, secret: Self.secret, clock: clock)
            ) { backend in
                // As `backend serve --receipts-db` wires it.
                await backend.router.receipts.setSink(ReceiptsCommand.queueSink(store))
                let jwt = try await Self.enroll(
                    backend, phone: "8C2D6F0E-6A57-4D52-9B43-2F0C1E7A9B10", token: devices[0].token)
                _ = try await Self.enroll(
                    backend, phone: "3B9A1C44-0D2E-4F6A-8B7C-5E1D2A3F4B60", token: devices[1].token)
                let receipt = await backend.router.handle(
                    BackendRequest(
                        method: "POST", target: PushReceipt.path, authorization: "Bearer \(jwt)",
                        body: Data(
                            #"{"push_id": "dienst-17", "received_at": "\#(Enrollment.formatDate(clock.now()))", "handled": "refreshed", "handler": "background-handler", "app_version": "2.4.0", "build": "240"}"#
                                .utf8)))
                #expect(receipt.status == 200, "\(String(decoding: receipt.body, as: UTF8.self))")
                let answer = try #require(try JSONSerialization.jsonObject(with: receipt.body) as? [String: Any])
                #expect(answer["queue_rows"] as? Int == 1 && answer["status"] as? String == "recorded")
            }
            await store.close()
            // The pushes were accepted two hours ago: past the grace.
            _ = try await pg.runSQL(
                "UPDATE public.kkpush_push_queue SET updated_at = now() - interval '2 hours';", database: database)

            let r = try await CLI.run(["receipts", "--db", pg.url(database), "--since", "1d", "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let object = try r.json()
            let totals = try #require(object["totals"] as? [String: Int])
            #expect(totals["accepted"] == 3 && totals["received"] == 1 && totals["handled"] == 1)
            #expect(totals["refreshed"] == 1 && totals["not_received"] == 2)
            let groups = try #require(object["groups"] as? [[String: Any]])
            let version = try #require(groups.first { $0["app_version"] as? String == "2.4.0" })
            #expect(version["push_type"] as? String == "background" && version["priority"] as? Int == 5)
            #expect(version["received"] as? Int == 1 && version["app_build"] as? String == "240")
            let silent = try #require(object["never_received"] as? [[String: Any]])
            #expect(
                Set(silent.compactMap { $0["device_token"] as? String }) == [devices[1].token, devices[2].token])

            let text = try await CLI.run(["receipts", "--db", pg.url(database)])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("accepted but never received (2 tokens"), "\(text.stdout)")
            #expect(text.stdout.contains(devices[2].token))
        }
    }

    @Test("Bad --since and --grace are usage errors naming the flag; a queue before version 3 is named")
    func refusals() async throws {
        let since = try await CLI.run(["receipts", "--db", "postgres://u@127.0.0.1:1/x", "--since", "yesterday"])
        #expect(since.status == 64 && since.stderr.contains("--since 'yesterday'"), "\(since.stderr)")
        let grace = try await CLI.run(["receipts", "--db", "postgres://u@127.0.0.1:1/x", "--grace", "-5"])
        #expect(grace.status == 64 && grace.stderr.contains("--grace"), "\(grace.stderr)")
        // A queue at version 2 (before the receipt columns): named, with the migration that adds them.
        let (pg, database, _) = try await Q.migratedDatabase()
        _ = try await pg.runSQL(
            "DELETE FROM public.kkpush_push_queue_versions WHERE version >= 3;", database: database)
        let old = try await CLI.run(["receipts", "--db", pg.url(database), "--json"])
        let said = old.stdout + old.stderr
        #expect(old.status == 2 && said.contains("queue-not-migrated"), "\(said)")
        #expect(said.contains("receipts need version 3") && said.contains("kkpush queue migrate"), "\(said)")
    }

    @Test("backend serve --receipts-db records a receipt posted over HTTP (curl) on its push's queue row")
    func serveRecordsOnTheQueue() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        let url = pg.url(database)
        #expect(try await CLI.run(["backend", "migrate", "--db", url]).status == 0)
        let (serve, base, line) = try await CLI.startBackend(
            ["--db", url, "--receipts-db", url], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        defer { serve.send(SIGKILL) }
        #expect(line.contains("receipts recorded on the push queue"), "\(line)")
        let phone = "6F1C2A8E-0000-4000-8000-00000000D001"
        let (created, createdText) = try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "--data",
            #"{"tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "\#(phone)"}"#,
            base + "/admin/enrollments",
        ])
        #expect(created == 201, "\(createdText)")
        let enrolled = try #require(
            try JSONSerialization.jsonObject(with: Data(createdText.split(separator: "\n").dropLast().joined().utf8))
                as? [String: Any])
        let jwt = try #require(enrolled["signed_device_token"] as? String)
        let token = TestTokens.random()
        let (updated, updatedText) = try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(jwt)", "--data",
            #"{"token": "\#(token)", "bundle_id": "\#(Q.topic)", "build_environment": "development", "app_version": "2.4.0", "hardware_identifier": "\#(phone)"}"#,
            base + "/api/mobile/v1/device/apns-token",
        ])
        #expect(updated == 200, "\(updatedText)")
        // The backend's push, queued and accepted (as a worker leaves it), carrying its push id.
        _ = try await pg.runSQL(
            """
            INSERT INTO public.kkpush_push_queue (device_token, topic, push_type, payload, environment)
            VALUES ('\(token)', '\(Q.topic)', 'alert', '{"aps":{"alert":"x","mutable-content":1},"kk_push_id":"d-5"}',
                'sandbox');
            UPDATE public.kkpush_push_queue SET state = 'accepted', apns_id = '6F1E6B7A-2C44-4E0B-9C1D-0A3B5C7D9E11';
            """, database: database)
        let (posted, postedText) = try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(jwt)", "--data",
            #"{"apns_id": "6f1e6b7a-2c44-4e0b-9c1d-0a3b5c7d9e11", "received_at": "\#(Enrollment.formatDate(Date()))", "handled": "shown", "handler": "service-extension"}"#,
            base + PushReceipt.path,
        ])
        #expect(posted == 200 && postedText.contains(#""queue_rows":1"#), "\(postedText)")
        #expect(try await Q.rows(pg, database, "handled, received_at IS NOT NULL, push_id") == [["shown", "t", "d-5"]])
        await serve.stop()
    }
}
