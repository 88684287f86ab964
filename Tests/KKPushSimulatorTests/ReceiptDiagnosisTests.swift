import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushMock
import KKPushSimulator
import KantineKoning
import KantineKoningReceipts
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `diagnose` with the app's receipts: a simulated phone (real mock, client and backend) posts its receipts with
/// `PushReceiptPoster` to the backend's route; the backend's `GET /admin/receipts` answer and the mock's delivery-log
/// entry are read as `diagnose --receipts` and `--delivery` read them, and judged.
@Suite("diagnose with the app's receipts: received, dropped, missing, never a false verdict")
struct ReceiptDiagnosisTests {
    static let member = EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)

    static func phone(_ world: SimulationWorld, receipts: Bool = true) async throws -> SimulatedApp {
        try await world.makeApp(
            name: "Ouder JO11-3", build: AppBuild(scheme: .release), enrollments: [member], postsReceipts: receipts)
    }

    /// Sends `payload` to `app` with the backend's APNs client; the apns-id, lowercase.
    static func send(_ world: SimulationWorld, to app: SimulatedApp, _ payload: String, type: PushType, priority: Int)
        async throws -> String
    {
        let request = NotificationRequest(
            deviceToken: await app.deviceToken ?? "", topic: app.bundleID, pushType: type, priority: priority,
            payload: Array(payload.utf8))
        let outcome = await world.client.send(request, environment: app.build.tokenEnvironment)
        guard case .accepted(let id?, _) = outcome.result else {
            throw KKPushError(code: .simulateRequestFailed, message: "not accepted: \(outcome.result)")
        }
        return id.lowercased()
    }

    static let background = #"{"aps":{"content-available":1},"type":"dienst_update"}"#
    static let alert = #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"JO11-3"}},"type":"dienst_update"}"#

    /// The backend's receipts as its admin API answers them (`GET /admin/receipts`), over HTTP.
    static func receiptListing(_ world: SimulationWorld) async throws -> [UInt8] {
        let url = try #require(URL(string: world.backend.baseURL + "/admin/receipts"))
        let (data, response) = try await URLSession(configuration: .ephemeral).data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return Array(data)
    }

    /// The diagnosis of push `apnsID` with its delivery-log entry (when `withRecord`), the told app state, and the
    /// backend's receipts.
    static func diagnose(
        _ world: SimulationWorld, _ apnsID: String, withRecord: Bool = true, appState: DiagnosisFacts.AppState? = nil,
        pushType: String? = nil, payload: String? = nil
    ) async throws -> Diagnosis {
        var request = DiagnosisRequest(now: Date())
        if withRecord {
            let entry = try #require(world.mock.delivery(apnsID: apnsID))
            let log = try JSONEncoder().encode(["notifications": [entry]])
            request.delivery = try DeliveryRecordReading.read(Array(log), label: "log.json", apnsID: apnsID)
        }
        if let appState { request.deviceSide = DiagnosisFacts.DeviceSide(appState: appState) }
        request.pushType = pushType
        if let payload {
            request.payload = PayloadFile.read(Array(payload.utf8))
        }
        request.receipts = try ReceiptReading.read(
            try await receiptListing(world), label: "receipts.json", apnsID: apnsID)
        let report = try await DiagnosisGathering.run(request, enrollments: [])
        return try #require(report.headline)
    }

    static func codes(_ d: Diagnosis) -> [String] { d.findings.map(\.code.rawValue) }

    @Test("A background push the app refreshed on: receipt-received names the receipt, no verdict")
    func received() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await Self.phone(world)
            try await app.setDeviceState(app: .background)
            let id = try await Self.send(world, to: app, Self.background, type: .background, priority: 5)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            let d = try await Self.diagnose(world, id)
            #expect(d.verdict == nil, "\(d.findings)")
            let info = try #require(d.findings.first { $0.code.rawValue == "receipt-received" })
            #expect(info.severity == .info && info.message.contains("'refreshed' by background-handler"))
        }
    }

    @Test("A receipt outranks a wrong device state: no force-quit verdict for a push the app says it refreshed on")
    func noFalseVerdict() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await Self.phone(world)
            let id = try await Self.send(world, to: app, Self.background, type: .background, priority: 5)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            // Told force-quit (wrongly): without the receipts that is the app-force-quit verdict.
            var told = DiagnosisRequest(now: Date())
            told.deviceSide = DiagnosisFacts.DeviceSide(appState: .forceQuit)
            told.pushType = "background"
            told.payload = PayloadFile.read(Array(Self.background.utf8))
            let without = try #require(try await DiagnosisGathering.run(told, enrollments: []).headline)
            #expect(without.verdict?.code.rawValue == "app-force-quit")
            let d = try await Self.diagnose(
                world, id, withRecord: false, appState: .forceQuit, pushType: "background", payload: Self.background)
            #expect(d.verdict == nil, "\(d.findings)")
            #expect(Self.codes(d).contains("receipt-received") && !Self.codes(d).contains("app-force-quit"))
        }
    }

    @Test("An alert to a backgrounded app, opened later: the on-open receipt clears alert-no-background-refresh")
    func openedLater() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await Self.phone(world)
            try await app.setDeviceState(app: .background)
            let id = try await Self.send(world, to: app, Self.alert, type: .alert, priority: 10)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            let before = try await Self.diagnose(world, id)
            // Not opened yet: no receipt, the record says the code waits for the open: the rule's verdict stands.
            #expect(before.verdict?.code.rawValue == "alert-no-background-refresh", "\(before.findings)")
            #expect(Self.codes(before).contains("receipt-none") && !Self.codes(before).contains("receipt-missing"))
            try await app.open()
            let after = try await Self.diagnose(world, id)
            #expect(after.verdict == nil, "\(after.findings)")
            #expect(
                after.findings.contains { $0.code.rawValue == "receipt-received" && $0.message.contains("on-open") })
        }
    }

    @Test("A receipt 'dropped' is receipt-dropped, naming the handler")
    func dropped() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await Self.phone(world, receipts: false)
            try await app.setDeviceState(app: .background)
            let id = try await Self.send(world, to: app, Self.background, type: .background, priority: 5)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            // A client of our own posts the app's receipt: the handler dropped the push.
            let jwt = try #require(await app.enrollments.first?.signedDeviceToken)
            let poster = PushReceiptPoster(backend: try #require(URL(string: world.backend.baseURL)), deviceJWT: jwt)
            _ = try await poster.post(AppPushReceipt(apnsID: id, handled: .dropped, handler: "background-handler"))
            let d = try await Self.diagnose(world, id)
            let finding = try #require(d.findings.first { $0.code.rawValue == "receipt-dropped" })
            #expect(finding.severity == .error && finding.message.contains("background-handler"))
            #expect(d.verdict?.code.rawValue == "receipt-dropped")
        }
    }

    @Test("Delivered to code that posts receipts and none came: receipt-missing, a warning, no APNs verdict")
    func missing() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await Self.phone(world, receipts: false)
            try await app.setDeviceState(app: .background)
            let id = try await Self.send(world, to: app, Self.background, type: .background, priority: 5)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            let d = try await Self.diagnose(world, id)
            let warning = try #require(d.findings.first { $0.code.rawValue == "receipt-missing" })
            #expect(warning.severity == .warning && warning.message.contains("background-handler"))
            #expect(d.verdict == nil, "\(d.findings)")
        }
    }

    @Test("Receipts as JSON lines match by kk_push_id; a bad file is receipts-shape naming it")
    func reading() throws {
        let lines = """
            {"push_id": "p-1", "handled": "refreshed", "handler": "background-handler", "received_at": "2027-01-15T09:30:00Z"}

            {"apns_id": "6E0D3B1C-6A5C-4E1B-9F1D-2B7F0C1D2E3F", "handled": "shown"}
            """
        let evidence = try ReceiptReading.read(Array(lines.utf8), label: "--receipts r.jsonl")
        #expect(evidence.receipts.count == 2)
        var facts = DiagnosisFacts(now: Date())
        facts.payload = Array(#"{"aps":{"content-available":1},"kk_push_id":"p-1"}"#.utf8)
        facts.receipts = evidence
        #expect(facts.matchingReceipts.map(\.handler) == ["background-handler"])
        for bad in [#"{"handled": "refreshed"}"#, #"{"apns_id": "x", "handled": "read"}"#, "[1]", "no json\nat all"] {
            do {
                _ = try ReceiptReading.read(Array(bad.utf8), label: "--receipts r.json")
                Issue.record("read \(bad)")
            } catch let e as KKPushError {
                #expect(e.code.rawValue == "receipts-shape" && e.message.contains("r.json"), "\(e.message)")
            }
        }
    }
}
