import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Live Activity pushes through the in-process client to the in-process mock: the mock accepts what APNs
/// accepts (the shared rules' warnings do not make it reject), and rejects an oversized one as APNs does.
@Suite("Live Activity pushes to the mock")
struct LiveActivityMockTests {
    static let topic = LiveActivityContent.topic(forBundleID: ClientFixtures.topic)

    static func request(_ token: String, _ payload: Payload, priority: Int = 5) -> NotificationRequest {
        ClientFixtures.request(
            token, topic: topic, pushType: LiveActivityContent.pushType, priority: priority,
            payload: payload.encoded())
    }

    @Test("start, update and end are accepted and delivered with push type liveactivity, on one token path")
    func startUpdateEnd() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let now = LiveActivityRules.currentUnixSeconds()
            let contents: [LiveActivityContent] = [
                .start(
                    attributesType: "KantineAttributes", attributes: ["club": "vv-oranje"], contentState: ["open": 3],
                    alert: .fields(APSAlert.Fields(title: "Dienst", body: "Begint")), timestamp: now),
                .update(contentState: ["open": 2], timestamp: now + 1),
                .end(contentState: ["open": 0], timestamp: now + 2, dismissalDate: now + 3600),
            ]
            for content in contents {
                let request = Self.request(device.token, .liveActivity(content))
                // The pre-flight has nothing to say beyond notes.
                let verdict = APNsRequestRules.preflight(request, authentication: .token)
                #expect(verdict.isValid && verdict.warnings.isEmpty, "\(verdict.problems)")
                let outcome = await client.send(request, environment: .sandbox)
                #expect(outcome.isAccepted, "\(outcome)")
            }
            let delivered = server.deliveries(token: device.token)
            #expect(delivered.count == 3)
            #expect(delivered.allSatisfy { $0.pushType == "liveactivity" && $0.topic == Self.topic })
            let events = try delivered.sorted { $0.sequence < $1.sequence }.map {
                try Payload(parsing: $0.payload).aps?.event?.rawValue
            }
            #expect(events == ["start", "update", "end"])
        }
    }

    @Test("a payload with warnings only (milliseconds timestamp) is accepted by the mock, as by APNs")
    func warningsAreNotRejections() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let payload = Payload.liveActivity(
                .update(contentState: ["open": 1], timestamp: LiveActivityRules.currentUnixSeconds() * 1000))
            let request = Self.request(device.token, payload)
            let verdict = APNsRequestRules.preflight(request, authentication: .token)
            let warning = try #require(
                verdict.warnings.first { $0.code.rawValue == "liveactivity-timestamp-milliseconds" })
            #expect(warning.message.contains("timestamp is in milliseconds; APNs wants seconds"))
            let outcome = await client.send(request, environment: .sandbox)
            #expect(outcome.isAccepted, "\(outcome)")
            #expect(outcome.problems.contains { $0.code.rawValue == "liveactivity-timestamp-milliseconds" })
        }
    }

    @Test("over 4096 bytes: the mock answers 413 PayloadTooLarge (pre-flight off), the pre-flight stops it first")
    func tooLarge() async throws {
        try await ClientFixtures.withMockAndClient(client: { _, configuration in configuration.preflight = false }) {
            server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let payload = Payload.liveActivity(
                .update(
                    contentState: ["note": .string(String(repeating: "x", count: 4100))],
                    timestamp: LiveActivityRules.currentUnixSeconds()))
            let outcome = await client.send(Self.request(device.token, payload), environment: .sandbox)
            #expect(outcome.rejection?.status == 413)
            #expect(outcome.rejection?.reason == .payloadTooLarge)
            let verdict = APNsRequestRules.preflight(Self.request(device.token, payload), authentication: .token)
            #expect(verdict.rejection?.description == "413 PayloadTooLarge")
        }
    }
}
