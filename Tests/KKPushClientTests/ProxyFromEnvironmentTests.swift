import Testing

@testable import KKPushClient

@Suite("The proxy from the environment, read once in libcurl's order")
struct ProxyFromEnvironmentTests {
    private func proxy(_ environment: [String: String]) -> EnvironmentProxy {
        EnvironmentProxy(lookup: { environment[$0] })
    }

    @Test("Nothing set: no proxy, no bypass list")
    func nothingSet() {
        #expect(proxy([:]) == EnvironmentProxy(proxy: "", noProxy: ""))
    }

    @Test("https_proxy before HTTPS_PROXY before all_proxy before ALL_PROXY; http_proxy is not for https")
    func order() {
        let all = [
            "https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2", "all_proxy": "http://c:3",
            "ALL_PROXY": "http://d:4", "http_proxy": "http://e:5",
        ]
        #expect(proxy(all).proxy == "http://a:1")
        var rest = all
        rest["https_proxy"] = nil
        #expect(proxy(rest).proxy == "http://b:2")
        rest["HTTPS_PROXY"] = nil
        #expect(proxy(rest).proxy == "http://c:3")
        rest["all_proxy"] = nil
        #expect(proxy(rest).proxy == "http://d:4")
        rest["ALL_PROXY"] = nil
        #expect(proxy(rest).proxy == "")
    }

    @Test("An empty variable means no proxy and ends the search, as in libcurl")
    func emptyStops() {
        #expect(proxy(["https_proxy": "", "all_proxy": "http://c:3"]).proxy == "")
    }

    @Test("no_proxy before NO_PROXY")
    func noProxy() {
        #expect(proxy(["no_proxy": "127.0.0.1", "NO_PROXY": "*"]).noProxy == "127.0.0.1")
        #expect(proxy(["NO_PROXY": "*"]).noProxy == "*")
    }
}
