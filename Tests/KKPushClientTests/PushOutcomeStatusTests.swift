import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `PushOutcome.httpStatus`: APNs' answer as the HTTP status every report and the activity registry record (200
/// accepted, the rejection's own status, nil without an answer), built once from the outcome.
@Suite("PushOutcome.httpStatus")
struct PushOutcomeStatusTests {
    static func outcome(_ result: PushOutcome.Result) -> PushOutcome {
        PushOutcome(result: result, duration: .milliseconds(2), attempts: 1, endpoint: .apple(.sandbox))
    }

    @Test("Accepted is 200; a rejection is its own status (400, 410, 429); a failure of any kind has none")
    func eachResult() {
        #expect(Self.outcome(.accepted(apnsID: "a", apnsUniqueID: nil)).httpStatus == 200)
        #expect(Self.outcome(.accepted(apnsID: nil, apnsUniqueID: nil)).httpStatus == 200)
        for (status, reason) in [(400, APNsReason.badDeviceToken), (410, .unregistered), (429, .tooManyRequests)] {
            let rejected = Self.outcome(.rejected(PushRejection(status: status, reason: reason)))
            #expect(rejected.httpStatus == status, "\(reason)")
        }
        for kind in PushFailure.Kind.allCases {
            let failed = Self.outcome(.failed(PushFailure(kind: kind, message: "no answer")))
            #expect(failed.httpStatus == nil, "\(kind)")
        }
    }

    @Test("Against the mock: an accepted push is 200, a rejection the status the mock answered (400, 410)")
    func fromTheMock() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let accepted = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(accepted.isAccepted && accepted.httpStatus == 200, "\(accepted)")
            // A sandbox token sent to production: 400 BadDeviceToken; an uninstalled app's token: 410 Unregistered.
            let wrongEnvironment = await client.send(ClientFixtures.request(device.token), environment: .production)
            let gone = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.unregister(token: gone.token)
            let unregistered = await client.send(ClientFixtures.request(gone.token), environment: .sandbox)
            for (outcome, status) in [(wrongEnvironment, 400), (unregistered, 410)] {
                let rejection = try #require(outcome.rejection, "\(outcome)")
                #expect(rejection.status == status && outcome.httpStatus == status, "\(outcome)")
            }
        }
    }
}
