import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@Suite("APNsClient through an HTTP CONNECT or SOCKS5 proxy")
struct APNsClientProxyTests {
    /// A real (tiny) proxy on 127.0.0.1, HTTP CONNECT or SOCKS5 (no authentication, RFC 1928): it logs
    /// each tunnel's target to `log` and relays bytes.
    static let proxyScript = """
        import socket, threading, select, sys, os, signal
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
        def watchdog():
            sys.stdin.read()
            os._exit(0)
        threading.Thread(target=watchdog, daemon=True).start()
        log, mode = sys.argv[1], sys.argv[2]
        def exactly(c, n):
            data = b''
            while len(data) < n:
                d = c.recv(n - len(data))
                if not d: raise EOFError
                data += d
            return data
        def socks5(c):
            ver, n = exactly(c, 2)
            methods = exactly(c, n)
            if ver != 5 or 0 not in methods: return None
            c.sendall(bytes([5, 0]))
            ver, cmd, _, atyp = exactly(c, 4)
            if cmd != 1: return None
            if atyp == 1: host = socket.inet_ntoa(exactly(c, 4))
            elif atyp == 3: host = exactly(c, exactly(c, 1)[0]).decode()
            elif atyp == 4: host = socket.inet_ntop(socket.AF_INET6, exactly(c, 16))
            else: return None
            port = int.from_bytes(exactly(c, 2), 'big')
            return host, port, ('ip' if atyp != 3 else 'name')
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(('127.0.0.1', 0)); srv.listen(16)
        print(srv.getsockname()[1], flush=True)
        def handle(c):
            if mode == 'socks5':
                try: target = socks5(c)
                except EOFError: return
                if target is None: return
                host, port, kind = target
                with open(log, 'a') as f: f.write('%s:%d %s\\n' % (host, port, kind))
                u = socket.create_connection((host, port))
                c.sendall(bytes([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]))
            else:
                data = b''
                while b'\\r\\n\\r\\n' not in data:
                    d = c.recv(4096)
                    if not d: return
                    data += d
                target = data.split(b'\\r\\n')[0].split(b' ')[1].decode()
                with open(log, 'a') as f: f.write(target + '\\n')
                host, port = target.rsplit(':', 1)
                u = socket.create_connection((host, int(port)))
                c.sendall(b'HTTP/1.1 200 Connection established\\r\\n\\r\\n')
            while True:
                r, _, _ = select.select([c, u], [], [], 30)
                if not r: return
                for s in r:
                    d = s.recv(65536)
                    if not d: return
                    (u if s is c else c).sendall(d)
        while True:
            c, _ = srv.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()
        """

    @Test(
        "pushes go through the proxy's tunnel, multiplexed, and are accepted",
        arguments: [
            // scheme, proxy mode, how the SOCKS5 proxy must have been given the target: the mock's host is an
            // IP literal, which libcurl passes as an address under socks5h:// too (a name would go as a name).
            ("http", "connect", ""), ("socks5", "socks5", " ip"), ("socks5h", "socks5", " ip"),
        ])
    func proxy(scheme: String, mode: String, addressKind: String) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-proxy-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        // The proxy exits when its stdin closes, and at the latest with SIGKILL at the end.
        let process = try BackgroundProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", Self.proxyScript, log.path, mode],
            holdStandardInput: true)
        defer { process.send(SIGKILL) }
        let line = (await process.firstLine(timeout: 20) ?? "").trimmingWhitespace()
        let port = try #require(Int(line), "proxy printed '\(line)'")
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
            #expect(error.code == "client-proxy-url")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
