import Foundation
import KKPushBackend
import KKPushCore
import KKPushSimulator
import KKPushTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import KKPushHTTP

@Suite("The app's HTTP client: kept-alive connections")
struct BackendConnectionTests {
    @Test("many requests, one after another, share one kept-alive connection")
    func keepAlive() async throws {
        let configuration = SimulatedBackendConfiguration(port: 0, secret: "kkpush-test-secret-0123456789abcdef")
        try await withSimulatedBackend(configuration: configuration) { backend in
            let api = try BackendAPI(baseURL: backend.baseURL, threads: 1)
            for _ in 0..<25 {
                let response = try await api.send("GET", "/admin/diensten")
                #expect(response.status == 200)
            }
            #expect(backend.openConnections == 1)
        }
    }

    /// A server that answers each connection's first request with `Connection: keep-alive` and then
    /// closes it anyway, and logs every connection it accepts.
    static let closingServer = """
        import socket, sys, os, threading
        def watchdog():
            sys.stdin.read()
            os._exit(0)
        threading.Thread(target=watchdog, daemon=True).start()
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(('127.0.0.1', 0)); srv.listen(16)
        print(srv.getsockname()[1], flush=True)
        count = 0
        while True:
            c, _ = srv.accept()
            count += 1
            data = b''
            while b'\\r\\n\\r\\n' not in data:
                d = c.recv(4096)
                if not d: break
                data += d
            body = b'{"connection":%d}' % count
            c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nConnection: keep-alive\\r\\nContent-Length: %d\\r\\n\\r\\n%s' % (len(body), body))
            c.close()
        """

    /// Runs `body` with the port of a ``closingServer``, and stops the server after.
    static func withClosingServer(_ body: (Int) async throws -> Void) async throws {
        let process = try BackgroundProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", Self.closingServer], holdStandardInput: true)
        defer { process.send(SIGKILL) }
        let line = (await process.firstLine(timeout: 20) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try #require(Int(line), "server printed '\(line)'")
        try await body(port)
    }

    @Test("a kept connection the server closed meanwhile is replaced, and the request still answered once")
    func staleConnection() async throws {
        try await Self.withClosingServer { port in
            let api = try BackendAPI(baseURL: "http://127.0.0.1:\(port)", threads: 1)
            for expected in 1...3 {
                let response = try await api.send("GET", "/anything")
                #expect(response.status == 200)
                let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Int]
                #expect(object?["connection"] == expected)
            }
        }
    }

    /// The race that hung a CI run: a request taken by a kept connection that the server's close reached
    /// before the request began (its handler had already seen the close). The request must be sent again
    /// on a new connection, not dropped.
    @Test("a request handed to a kept connection that closed before it began is sent again, not dropped")
    func closedBeforeStart() async throws {
        try await Self.withClosingServer { port in
            let client = HTTP1Client(host: "127.0.0.1", port: port, maximumConnections: 1, timeout: 10)
            defer { client.shutdown() }
            let first = try await client.send(method: "GET", target: "/first")
            #expect(first.status == 200)
            let connection = try #require(client.takeIdleConnection(), "the first connection is kept idle")
            try? await connection.channel.closeFuture.get()
            let request = "GET /second HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\r\n"
            let second = try await withCheckedContinuation { answer in
                connection.run(HTTP1Client.Job(bytes: Array(request.utf8), reply: { answer.resume(returning: $0) }))
            }.get()
            #expect(second.status == 200)
            let object = try JSONSerialization.jsonObject(with: Data(second.body)) as? [String: Int]
            #expect(object?["connection"] == 2)
        }
    }
}
