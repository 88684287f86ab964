public import Foundation
import KKPushCore

/// A proxy for tests: a Python script on 127.0.0.1 that logs each tunnel's target and relays bytes.
public struct TestProxy: Sendable {
    public let port: Int
    /// One line per tunnel: `host:port` (HTTP CONNECT), `host:port ip|name` (SOCKS5).
    public let log: URL
    private let process: BackgroundProcess

    /// Starts a proxy, `connect` (HTTP CONNECT) or `socks5`. It exits when ``stop()`` is called (or when this
    /// test process ends: it watches its standard input).
    public static func start(mode: String) async throws -> TestProxy {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-proxy-\(UUID().uuidString).log")
        let process = try BackgroundProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", Self.script, log.path, mode], holdStandardInput: true)
        let line = (await process.firstLine(timeout: 20) ?? "").trimmingWhitespace()
        guard let port = Int(line) else {
            process.send(SIGKILL)
            throw TestProxyError(message: "the test proxy printed '\(line)' instead of its port")
        }
        return TestProxy(port: port, log: log, process: process)
    }

    /// The tunnels' targets so far, one per tunnel.
    public func targets() -> [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Stops the proxy and removes its log.
    public func stop() {
        process.send(SIGKILL)
        try? FileManager.default.removeItem(at: log)
    }

    /// A real (tiny) proxy on 127.0.0.1, HTTP CONNECT or SOCKS5 (no authentication, RFC 1928): it logs
    /// each tunnel's target to `log` and relays bytes.
    static let script = """
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
}

struct TestProxyError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
