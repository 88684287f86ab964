import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Testing

@Suite("APNsClient through an HTTP CONNECT proxy")
struct APNsClientProxyTests {
    /// A real (tiny) CONNECT proxy on 127.0.0.1: it logs each CONNECT target to `log` and relays bytes.
    static let proxyScript = """
        import socket, threading, select, sys, os, signal
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
        def watchdog():
            sys.stdin.read()
            os._exit(0)
        threading.Thread(target=watchdog, daemon=True).start()
        log = sys.argv[1]
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(('127.0.0.1', 0)); srv.listen(16)
        print(srv.getsockname()[1], flush=True)
        def handle(c):
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

    @Test("pushes go through the proxy's CONNECT tunnel and are accepted")
    func connectProxy() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-proxy-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.proxyScript, log.path]
        let pipe = Pipe()
        let input = Pipe()
        process.standardOutput = pipe
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The proxy exits when its stdin closes; SIGKILL as well, as signals may be blocked in children.
        defer {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGKILL)
        }
        let line = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self).trimmingWhitespace()
        let port = try #require(Int(line), "proxy printed '\(line)'")
        try await ClientFixtures.withMockAndClient(client: { _, c in c.proxyURL = "http://127.0.0.1:\(port)" }) {
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
            #expect(targets == ["127.0.0.1:\(server.sandboxEndpoint.port)"])
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
