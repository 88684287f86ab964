// Send one push with provider-token auth and read APNs' answer, against a mock APNs server started in
// this process on free loopback ports, with the repository's test key. Run it from the repository root:
// `swift run kkpush-example`. With Apple's servers: your own .p8 key, key id and team id, and no endpoint.
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock

@main
struct Example {
    static func main() async throws {
        let key = try ES256PrivateKey(contentsOfFile: "Certificates/AuthKey_KKTEST0001.p8")
        let tokens = ProviderTokenCache(key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001")

        var mock = MockServerConfiguration()
        mock.certificatesDirectory = "Certificates"

        try await withMockServer(configuration: mock) { server in
            let device = server.mintDevice(environment: .sandbox, topic: "nl.kantinekoning.app")

            var configuration = APNsClientConfiguration(credential: .token(tokens))
            configuration.sandboxEndpoint = server.sandboxEndpoint  // the mock's address and the CA that signed it

            let request = NotificationRequest(
                deviceToken: device.token, topic: device.topic, pushType: .alert, priority: 10,
                payload: Payload.alert(title: "Dienst gewijzigd", body: "Zaterdag 9:00, kantine").encoded())
            let outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(request, environment: .sandbox)
            }

            switch outcome.result {
            case .accepted(let apnsID, _):
                print(
                    "accepted, apns-id \(apnsID ?? "none"); the mock delivered \(server.deliveries(token: device.token).count)"
                )
            case .rejected(let rejection):
                print("rejected: \(rejection.reason) (fix: \(rejection.reason.fix))")
            case .failed(let failure):
                print("failed: \(failure)")
            }
        }
    }
}
