import Foundation
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushMock
import KKPushTestSupport
import KantineKoning
import Testing

/// `diagnose` with the mock's delivery record: pushes sent with kkpush's client to the real in-process mock, the
/// mock's log entry read back as its admin API gives it (`{"notifications": [...]}`), judged.
@Suite("DiagnosisGathering: the mock's delivery record")
struct DeliveryRecordDiagnosisTests {
    static let topic = PushQueueFixtures.topic

    /// Sends `request` to a device set to `connectivity` and `app`; the diagnosis of the mock's record of it.
    static func diagnose(
        connectivity: MockConnectivity, app: MockAppState, _ make: (String) -> NotificationRequest
    ) async throws -> (Diagnosis, DeliveryState) {
        var configuration = MockServerConfiguration.forTests()
        configuration.certificatesDirectory = Repository.certificates.path
        return try await withMockServer(configuration: configuration) { server in
            let device = server.mintDevice(
                environment: .sandbox, topic: Self.topic, connectivity: connectivity, app: app)
            let client = try PushQueueFixtures.client(server)
            let outcome = await client.send(make(device.token), environment: .sandbox)
            await client.shutdown()
            guard case .accepted(let id?, _) = outcome.result else {
                Issue.record("not accepted: \(outcome.result)")
                throw KKPushError(code: .deliveryRecordShape, message: "not accepted")
            }
            let entry = try #require(server.delivery(apnsID: id))
            let log = try JSONEncoder().encode(["notifications": [entry]])
            var request = DiagnosisRequest(now: Date())
            request.delivery = try DeliveryRecordReading.read(Array(log), label: "log.json", apnsID: id)
            let report = try await DiagnosisGathering.run(request, enrollments: [])
            return (try #require(report.headline), entry.state)
        }
    }

    static func background(_ token: String, expiration: Int? = nil) -> NotificationRequest {
        NotificationRequest(
            deviceToken: token, topic: topic, pushType: .background, priority: 5, expiration: expiration,
            payload: Array(#"{"aps":{"content-available":1},"type":"dienst_update"}"#.utf8))
    }

    @Test("apns-expiration 0 to an offline phone: the record's headers alone give the verdict")
    func expirationZero() async throws {
        let (d, state) = try await Self.diagnose(connectivity: .offline, app: .background) {
            Self.background($0, expiration: 0)
        }
        #expect(state == .discardedExpired)
        #expect(d.verdict?.code.rawValue == "expiration-zero-offline", "\(d.findings)")
    }

    @Test("A background push to a force-quit app")
    func forceQuit() async throws {
        let (d, state) = try await Self.diagnose(connectivity: .online, app: .forceQuit) { Self.background($0) }
        #expect(state == .notRunForceQuit)
        #expect(d.verdict?.code.rawValue == "app-force-quit", "\(d.findings)")
    }

    @Test("Delivered and run in the background: no verdict, the info delivered-ran")
    func arrived() async throws {
        let (d, state) = try await Self.diagnose(connectivity: .online, app: .background) { Self.background($0) }
        #expect(state == .delivered)
        #expect(d.verdict == nil, "\(d.findings)")
        #expect(d.findings.contains { $0.code.rawValue == "delivered-ran" })
    }

    @Test("A file that is not the mock's log is an input error naming the file")
    func badShape() {
        #expect(throws: KKPushError.self) {
            _ = try DeliveryRecordReading.read(Array(#"{"x":1}"#.utf8), label: "--delivery x.json")
        }
        do {
            _ = try DeliveryRecordReading.read(Array("not json".utf8), label: "--delivery x.json")
        } catch let e as KKPushError {
            #expect(e.code.rawValue == "delivery-record-shape" && e.message.contains("x.json"))
        } catch { Issue.record("\(error)") }
    }
}
