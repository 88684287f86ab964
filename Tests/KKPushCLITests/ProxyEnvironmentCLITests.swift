import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The proxy from the environment, which the client reads once when it starts (libcurl's own per-transfer
/// lookup is switched off): `kkpush send` as a process, a real HTTP CONNECT proxy, the mock behind it.
@Suite("kkpush send takes its proxy from the environment as libcurl would")
struct ProxyEnvironmentCLITests {
    @Test("https_proxy carries the push through the proxy; with no_proxy naming the host it goes direct")
    func environmentProxy() async throws {
        let proxy = try await TestProxy.start(mode: "connect")
        defer { proxy.stop() }
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: AnswersSendMockCLITests.topic)
            let send =
                ["send", "--token", device.token, "--title", "Dienst", "--json"]
                + (try AnswersSendMockCLITests.credential(server))
            let target = "127.0.0.1:\(server.sandboxEndpoint.port)"
            let proxied = try await CLI.run(
                send, environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": ""])
            #expect(proxied.status == 0, "\(proxied.stderr)")
            #expect(try proxied.json()["status"] as? String == "accepted")
            #expect(proxy.targets() == [target])

            let direct = try await CLI.run(
                send, environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": "127.0.0.1"])
            #expect(direct.status == 0, "\(direct.stderr)")
            #expect(proxy.targets() == [target], "no_proxy did not bypass the proxy")
        }
    }
}
