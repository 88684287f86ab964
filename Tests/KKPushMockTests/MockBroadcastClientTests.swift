import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `APNsBroadcastClient` (libcurl) against the real mock: channel management, a broadcast, pre-flight,
/// the provider token renewed after `ExpiredProviderToken`.
@Suite("Broadcast client against the mock")
struct MockBroadcastClientTests {
    @Test("Create, read, list, broadcast, delete through the library; pre-flight; token renewed once")
    func library() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let (configuration, _) = try ClientSupport.configuration(server)
            let client = try APNsBroadcastClient(configuration: configuration)
            let bundle = Fixtures.topic
            let m = server.channelEndpoint(.production)

            let created = try await client.perform(.create(bundleID: bundle, storagePolicy: .noMessageStored), at: m)
            #expect(created.status == 201)
            let id = try #require(created.channelID)
            let read = try await client.perform(.read(bundleID: bundle, channelID: id), at: m)
            #expect(read.status == 200 && read.storagePolicy == .noMessageStored && read.pushType == "LiveActivity")
            let list = try await client.perform(.listAll(bundleID: bundle), at: m)
            #expect(list.channels == [id])
            #expect(
                try await client.perform(.listAll(bundleID: bundle), at: server.channelEndpoint(.sandbox)).channels
                    == [])

            let device = server.mintDevice(environment: .production, topic: bundle)
            try server.subscribe(token: device.token, toChannel: id)
            let payload = Array(#"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#.utf8)
            let requestID = "9f2c1c1e-6a55-4e0b-8d43-0f6f0c1b2a3d"
            let sent = try await client.broadcast(
                BroadcastRequest(bundleID: bundle, channelID: id, requestID: requestID, payload: payload),
                to: server.productionEndpoint)
            #expect(sent.status == 200 && sent.requestID == requestID)
            #expect(server.deliveries(token: device.token).map(\.apnsID) == [requestID])

            // The provider token expires: the client signs a new one and the broadcast goes through.
            #expect(server.expireProviderTokens() >= 1)
            let renewed = try await client.broadcast(
                BroadcastRequest(bundleID: bundle, channelID: id, payload: payload), to: server.productionEndpoint)
            #expect(renewed.status == 200)

            // Refused by APNs: reason, status, request id.
            let policy0 = try await client.broadcast(
                BroadcastRequest(bundleID: bundle, channelID: id, expiration: 1_900_000_000, payload: payload),
                to: server.productionEndpoint)
            #expect(policy0.status == 400 && policy0.reason == .badExpirationDate && policy0.requestID != nil)

            // Pre-flight stops a suffixed bundle id before it leaves the machine.
            await #expect {
                _ = try await client.broadcast(
                    BroadcastRequest(bundleID: bundle + ".push-type.liveactivity", channelID: id, payload: payload),
                    to: server.productionEndpoint)
            } throws: {
                ($0 as? KKPushError)?.code == .broadcastPreflight
                    && ($0 as? KKPushError)?.message.contains("TopicDisallowed") == true
            }

            let deleted = try await client.perform(.delete(bundleID: bundle, channelID: id), at: m)
            #expect(deleted.status == 204)
            let gone = try await client.perform(.read(bundleID: bundle, channelID: id), at: m)
            #expect(gone.reason == .channelNotRegistered)
        }
    }
}
