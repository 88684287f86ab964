/// The help text of every `--proxy` flag, so that `send`, `send-batch` and `diagnose` say the same (the
/// client library documents the same values on `APNsClientConfiguration.proxyURL`).
enum ProxyHelp {
    static let text = """
        Proxy URL: http://HOST:PORT or https://HOST:PORT (HTTP CONNECT), socks5h://HOST:PORT (names resolved \
        by the proxy), socks5://, socks4://, socks4a://. Without it, libcurl honours https_proxy (or \
        HTTPS_PROXY), all_proxy and no_proxy from the environment.
        """
}
