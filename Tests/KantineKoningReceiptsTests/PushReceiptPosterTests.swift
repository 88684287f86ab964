import Foundation
import KKPushBackend
import KKPushCore
import KKPushTestSupport
import KantineKoning
import KantineKoningReceipts
import Testing

/// The app-side receipt helper posting to the simulated backend over loopback HTTP: what the backend records, and
/// the refusals it names.
@Suite("The app posts push receipts")
struct PushReceiptPosterTests {
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A backend on 127.0.0.1 port 0 with one enrollment (with an APNs token); `body` gets it, its base URL and the
    /// enrollment's JWT.
    static func withEnrolledBackend(_ body: (SimulatedBackend, URL, String) async throws -> Void) async throws {
        let clock = ManualWallClock(now)
        try await withSimulatedBackend(
            configuration: SimulatedBackendConfiguration(port: 0, secret: secret, clock: clock)
        ) { backend in
            let enroll = await backend.router.handle(
                BackendRequest(
                    method: "POST", target: "/admin/enrollments",
                    body: Data(
                        #"{"tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "8C2D6F0E-6A57-4D52-9B43-2F0C1E7A9B10"}"#
                            .utf8)))
            #expect(enroll.status == 201, "\(String(decoding: enroll.body, as: UTF8.self))")
            let object = try #require(try JSONSerialization.jsonObject(with: enroll.body) as? [String: Any])
            let jwt = try #require(object["signed_device_token"] as? String)
            let token = String(repeating: "ab", count: 32)
            let update = await backend.router.handle(
                BackendRequest(
                    method: "POST", target: "/api/mobile/v1/device/apns-token", authorization: "Bearer \(jwt)",
                    body: Data(
                        #"{"token": "\#(token)", "bundle_id": "nl.kantinekoning.app", "build_environment": "development", "app_version": "2.4.0", "hardware_identifier": "8C2D6F0E-6A57-4D52-9B43-2F0C1E7A9B10"}"#
                            .utf8)))
            #expect(update.status == 200, "\(String(decoding: update.body, as: UTF8.self))")
            try await body(backend, try #require(URL(string: backend.baseURL)), jwt)
        }
    }

    @Test("A receipt by apns-id from a Notification Service Extension is recorded for the enrollment and its token")
    func recordsByAPNsID() async throws {
        try await Self.withEnrolledBackend { backend, url, jwt in
            let apnsID = "6F1E6B7A-2C44-4E0B-9C1D-0A3B5C7D9E11"
            let receipt = AppPushReceipt(
                apnsID: apnsID, receivedAt: Self.now.addingTimeInterval(-5), handled: .shown,
                handler: "service-extension", appVersion: "2.4.0", build: "240")
            let answer = try await PushReceiptPoster(backend: url, deviceJWT: jwt).post(receipt)
            #expect(answer.warnings.isEmpty && answer.queueRows == nil)
            let recorded = await backend.router.receipts.all(apnsID: apnsID)
            #expect(recorded.count == 1)
            let first = try #require(recorded.first)
            #expect(first.receipt.apnsID == apnsID.lowercased() && first.receipt.handled == .shown)
            #expect(first.receipt.receivedAt == Self.now.addingTimeInterval(-5))
            #expect(first.receipt.appVersion == "2.4.0" && first.receipt.build == "240")
            #expect(first.enrollment.tenantSlug == "vvwilhelmus")
            #expect(first.deviceToken == String(repeating: "ab", count: 32))
        }
    }

    @Test("A background push's handler sends the payload's kk_push_id; a local notification's identifier is left out")
    func recordsByPushID() async throws {
        try await Self.withEnrolledBackend { backend, url, jwt in
            let receipt = AppPushReceipt(
                userInfo: ["aps": ["content-available": 1], "kk_push_id": 4711], requestIdentifier: "local-reminder",
                handled: .refreshed, handler: "background-handler", receivedAt: Self.now)
            #expect(receipt.pushID == "4711" && receipt.apnsID == nil)
            _ = try await PushReceiptPoster(backend: url, deviceJWT: jwt).post(receipt)
            let recorded = await backend.router.receipts.all(pushID: "4711")
            #expect(recorded.map(\.receipt.handled) == [.refreshed])
            #expect(recorded.first?.receipt.handler == "background-handler")
        }
    }

    @Test("Refusals name the field or the bearer: a bad handler, a time ahead of the backend, a wrong JWT")
    func refusals() async throws {
        try await Self.withEnrolledBackend { backend, url, jwt in
            let poster = PushReceiptPoster(backend: url, deviceJWT: jwt)
            let badHandler = await #expect(throws: PushReceiptError.self) {
                try await poster.post(
                    AppPushReceipt(pushID: "p1", receivedAt: Self.now, handled: .shown, handler: "widget"))
            }
            #expect(badHandler?.status == 400 && badHandler?.code == "receipt-invalid")
            #expect(badHandler?.message.contains("handler 'widget'") == true)
            let ahead = await #expect(throws: PushReceiptError.self) {
                try await poster.post(
                    AppPushReceipt(pushID: "p1", receivedAt: Self.now.addingTimeInterval(3600), handled: .shown))
            }
            #expect(ahead?.status == 400 && ahead?.message.contains("received_at") == true)
            let wrongJWT = await #expect(throws: PushReceiptError.self) {
                try await PushReceiptPoster(backend: url, deviceJWT: jwt + "x").post(
                    AppPushReceipt(pushID: "p1", receivedAt: Self.now, handled: .shown))
            }
            #expect(wrongJWT?.status == 401)
            let none = await #expect(throws: PushReceiptError.self) {
                try await poster.post(AppPushReceipt(receivedAt: Self.now, handled: .shown))
            }
            #expect(none?.status == nil && none?.code == "receipt-invalid")
            #expect(await backend.router.receipts.all().isEmpty)
        }
    }
}
