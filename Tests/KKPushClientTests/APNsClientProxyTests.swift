import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@Suite("APNsClient through an HTTP CONNECT or SOCKS5 proxy")
struct APNsClientProxyTests {
    @Test(
        "pushes go through the proxy's tunnel, multiplexed, and are accepted",
        arguments: [
            // scheme, proxy mode, how the SOCKS5 proxy must have been given the target: the mock's host is an
            // IP literal, which libcurl passes as an address under socks5h:// too (a name would go as a name).
            ("http", "connect", ""), ("socks5", "socks5", " ip"), ("socks5h", "socks5", " ip"),
        ])
    func proxy(scheme: String, mode: String, addressKind: String) async throws {
        let proxy = try await TestProxy.start(mode: mode)
        defer { proxy.stop() }
        let (port, log) = (proxy.port, proxy.log)
        try await ClientFixtures.withMockAndClient(client: { _, c in c.proxyURL = "\(scheme)://127.0.0.1:\(port)" }) {
            server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let items = (0..<20).map { _ in
                PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            }
            let collector = ResultCollector()
            await client.sendAll(items) { collector.add($0) }
            #expect(collector.all.count == 20)
            #expect(collector.all.allSatisfy { $0.outcome.isAccepted })
            let targets = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            // One tunnel, multiplexed: the 20 pushes shared it.
            #expect(targets == ["127.0.0.1:\(server.sandboxEndpoint.port)\(addressKind)"])
        }
    }

    @Test("a proxy URL libcurl cannot use is rejected when the client is made")
    func badProxyURL() throws {
        let configuration = APNsClientConfiguration(proxyURL: "ftp://proxy:21")
        #expect(throws: KKPushError.self) { try APNsClient(configuration: configuration) }
        do {
            _ = try APNsClient(configuration: configuration)
        } catch let error as KKPushError {
            #expect(error.code.rawValue == "client-proxy-url")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
