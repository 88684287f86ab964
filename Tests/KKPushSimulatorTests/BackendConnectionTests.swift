import Foundation
import KKPushBackend
import KKPushCore
import KKPushSimulator
import Testing

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

    @Test("a kept connection the server closed meanwhile is replaced, and the request still answered once")
    func staleConnection() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.closingServer]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGKILL)
        }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try #require(Int(line), "server printed '\(line)'")
        let api = try BackendAPI(baseURL: "http://127.0.0.1:\(port)", threads: 1)
        for expected in 1...3 {
            let response = try await api.send("GET", "/anything")
            #expect(response.status == 200)
            let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Int]
            #expect(object?["connection"] == expected)
        }
    }
}
