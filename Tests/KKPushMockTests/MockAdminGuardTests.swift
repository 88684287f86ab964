import Foundation
import KKPushCore
import KKPushMock
import Synchronization
import Testing

@Suite("The admin API's guards: Origin, admin token, key files, binding", .serialized)
struct MockAdminGuardTests {
    static let token = "test-admin-token-0123456789"

    @Test("A request with an Origin header (a web page) is refused with 403, whatever the method; nothing changes")
    func originRefused() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            for (method, path, json) in [
                ("GET", "/health", nil), ("POST", "/reset", nil),
                ("POST", "/faults", #"{"kind":"close"}"#),
            ] as [(String, String, String?)] {
                let r = try await admin.call(method, path, json: json, headers: ["Origin: http://evil.example"])
                #expect(r.status == 403)
                let error = try #require(r.body["error"] as? [String: Any])
                #expect(error["code"] as? String == "admin-origin")
                #expect((error["message"] as? String)?.contains("Origin") == true)
            }
            #expect(server.faults.isEmpty)
            #expect(try await admin.call("GET", "/health").status == 200)
        }
    }

    @Test("The admin API's own origin (its web console) is allowed; another, or a rebound name, is refused")
    func ownOriginAllowed() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let base = try #require(server.adminURL)
            let port = try #require(URL(string: base)?.port)
            let admin = Admin(base: base)
            // curl sends Host: 127.0.0.1:<port>, as a browser on the console's page does.
            let own = try await admin.call("POST", "/faults", json: #"{"kind":"close"}"#, headers: ["Origin: \(base)"])
            #expect(own.status == 201)
            #expect(server.faults.count == 1)
            let local = try await admin.call(
                "GET", "/health", headers: ["Origin: http://localhost:\(port)", "Host: localhost:\(port)"])
            #expect(local.status == 200)
            for (origin, host) in [
                ("http://127.0.0.1:\(port + 1 == 65536 ? 1 : port + 1)", nil),
                ("https://127.0.0.1:\(port)", nil),
                ("http://127.0.0.1", nil),
                // DNS rebinding: a page whose name now points at 127.0.0.1 has Origin == http://Host, but its
                // Host is a name; without an admin token only addresses and localhost count as the console.
                ("http://evil.example:\(port)", "evil.example:\(port)"),
            ] as [(String, String?)] {
                var headers = ["Origin: \(origin)"]
                if let host { headers.append("Host: \(host)") }
                let r = try await admin.call("DELETE", "/faults", headers: headers)
                #expect(r.status == 403, "\(origin) \(host ?? "")")
                #expect((r.body["error"] as? [String: Any])?["code"] as? String == "admin-origin")
            }
            #expect(server.faults.count == 1)
        }
    }

    @Test("The console's files need no admin token and carry a strict CSP; its data and POST /send still do")
    func consoleFiles() async throws {
        var configuration = Fixtures.configuration()
        configuration.adminToken = Self.token
        try await withMockServer(configuration: configuration) { server in
            let base = try #require(server.adminURL)
            for (path, type) in [
                ("/", "text/html; charset=utf-8"), ("/console.js", "text/javascript; charset=utf-8"),
                ("/console.css", "text/css; charset=utf-8"),
            ] {
                let r = try await Curl.run(
                    "/usr/bin/curl", ["-sS", "-D", "-", "-o", "/dev/null", base + path], timeout: 30)
                let head = r.stdout.lowercased()
                #expect(head.hasPrefix("http/1.1 200"), "\(path): \(head)")
                #expect(head.contains("content-type: \(type)"), "\(head)")
                #expect(
                    head.contains(
                        "content-security-policy: default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                    ), "\(head)")
                #expect(head.contains("x-content-type-options: nosniff"))
            }
            let page = try await Curl.run("/usr/bin/curl", ["-sS", base + "/"], timeout: 30).stdout
            // Self-contained: nothing loaded from elsewhere, no inline script or handler.
            #expect(page.contains(#"<script src="/console.js" defer></script>"#))
            #expect(!page.contains("http://") && !page.contains("https://") && !page.contains("//cdn"))
            #expect(!page.lowercased().contains("onclick=") && !page.lowercased().contains("onload="))
            let admin = Admin(base: base)
            #expect(try await admin.call("GET", "/devices").status == 401)
            #expect(try await admin.call("POST", "/send", json: "{}").status == 401)
            #expect(try await admin.call("POST", "/", json: "{}").status == 401)
        }
    }

    @Test("POST /send without a sender answers 501; with one, it sends to the mock's own listener and explains")
    func sendHook() async throws {
        let body =
            #"{"environment":"production","token":"\#(String(repeating: "ab", count: 32))","topic":"nl.kantinekoning.app","payload":"{}"}"#
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let r = try await Admin(base: try #require(server.adminURL)).call("POST", "/send", json: body)
            #expect(r.status == 501)
            #expect((r.body["error"] as? [String: Any])?["code"] as? String == "admin-send-unavailable")
        }
        let seen = Mutex<[TestPushRequest]>([])
        var configuration = Fixtures.configuration()
        configuration.testPushSender = { request in
            seen.withLock { $0.append(request) }
            return TestPushAnswer(status: "rejected", httpStatus: 410, reason: "Unregistered", apnsID: "x")
        }
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let r = try await admin.call("POST", "/send", json: body)
            #expect(r.status == 200)
            #expect(r.body["http_status"] as? Int == 410)
            #expect(r.body["explanation"] as? String == APNsReason.unregistered.explanation)
            #expect(r.body["fix"] as? String == APNsReason.unregistered.fix)
            let request = try #require(seen.withLock { $0.first })
            #expect(request.endpoint == server.productionEndpoint)
            #expect(request.payload == Array("{}".utf8))
            #expect(request.topic == "nl.kantinekoning.app")
            // The form's mistakes are named.
            let typo = try await admin.call("POST", "/send", json: #"{"environment":"sandbox","tokn":"ab"}"#)
            #expect(typo.status == 400)
            let bad = try await admin.call(
                "POST", "/send", json: #"{"environment":"staging","token":"ab","topic":"t","payload":"{}"}"#)
            #expect(bad.status == 400)
            #expect((bad.body["error"] as? [String: Any])?["message"] as? String == "environment 'staging' is unknown.")
        }
    }

    @Test("With an admin token: none or a wrong one gets 401, the right one is accepted")
    func tokenRequired() async throws {
        var configuration = Fixtures.configuration()
        configuration.adminToken = Self.token
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let none = try await admin.call("POST", "/faults", json: #"{"kind":"close"}"#)
            #expect(none.status == 401)
            #expect((none.body["error"] as? [String: Any])?["code"] as? String == "admin-unauthorized")
            let wrong = try await admin.call(
                "GET", "/health", headers: ["Authorization: Bearer test-admin-token-0123456780"])
            #expect(wrong.status == 401)
            let basic = try await admin.call("GET", "/health", headers: ["Authorization: Basic \(Self.token)"])
            #expect(basic.status == 401)
            #expect(server.faults.isEmpty)
            let right = try await admin.call(
                "POST", "/faults", json: #"{"kind":"close"}"#, headers: ["Authorization: Bearer \(Self.token)"])
            #expect(right.status == 201)
            #expect(server.faults.count == 1)
            // The token does not excuse an Origin.
            let page = try await admin.call(
                "GET", "/health", headers: ["Authorization: Bearer \(Self.token)", "Origin: null"])
            #expect(page.status == 403)
        }
    }

    @Test("The admin API beyond loopback needs a token: refused at start, naming the fix; tokens are checked")
    func bindingNeedsToken() async throws {
        var configuration = Fixtures.configuration()
        configuration.adminHost = "0.0.0.0"
        let e = #expect(throws: KKPushError.self) { try configuration.validate() }
        #expect(e?.code.rawValue == "mock-admin-token-required")
        // In the library's words (its configuration); `mock serve` names its flag (MockServeCommandTests).
        #expect(e?.fix?.contains("(adminToken)") == true)
        configuration.adminToken = "short"
        let short = #expect(throws: KKPushError.self) { try configuration.validate() }
        #expect(short?.code.rawValue == "mock-admin-token")
        configuration.adminToken = Self.token
        #expect(throws: Never.self) { try configuration.validate() }
        // Loopback needs none; no admin API needs none.
        var loopback = Fixtures.configuration()
        loopback.adminHost = "127.0.0.1"
        #expect(throws: Never.self) { try loopback.validate() }
        var noAdmin = Fixtures.configuration()
        noAdmin.adminHost = "0.0.0.0"
        noAdmin.adminPort = nil
        #expect(throws: Never.self) { try noAdmin.validate() }
    }

    @Test("POST /keys reads a file only inside the certificates folder")
    func keyFileInsideCertificates() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let inside = try await admin.call(
                "POST", "/keys", json: #"{"key_id":"NEWKEY0001","team_id":"KKTEAM0001","file":"AuthKey_KKTEST0001.p8"}"#
            )
            #expect(inside.status == 201)
            #expect(server.keys.contains { $0.keyID == "NEWKEY0001" })
            for file in ["../Package.swift", "/etc/passwd", Fixtures.certificates + "/../README.md"] {
                let r = try await admin.call(
                    "POST", "/keys", json: #"{"key_id":"BADKEY0001","team_id":"KKTEAM0001","file":"\#(file)"}"#)
                #expect(r.status == 403)
                let error = try #require(r.body["error"] as? [String: Any])
                #expect(error["code"] as? String == "admin-key-file-outside")
                #expect((error["message"] as? String)?.contains("certificates folder") == true)
            }
            #expect(!server.keys.contains { $0.keyID == "BADKEY0001" })
        }
    }

    @Test("New limits in the config file, and their validation")
    func limitsParsing() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("mock.json")
        try Data(
            #"{"first_request_timeout_s": 4, "body_timeout_s": 12.5, "max_connections": 9, "admin_host": "127.0.0.2"}"#
                .utf8
        )
        .write(to: file)
        var configuration = Fixtures.configuration()
        try configuration.apply(configFile: file.path)
        #expect(configuration.firstRequestTimeout == 4)
        #expect(configuration.streamBodyTimeout == 12.5)
        #expect(configuration.maxConnections == 9)
        #expect(configuration.adminHost == "127.0.0.2")
        #expect(throws: Never.self) { try configuration.validate() }
        for bad in [0, -1, .nan, .infinity, 3601] as [Double] {
            var c = configuration
            c.firstRequestTimeout = bad
            #expect(
                (#expect(throws: KKPushError.self) { try c.validate() })?.message.contains("first_request_timeout_s")
                    == true)
            c = configuration
            c.streamBodyTimeout = bad
            #expect(
                (#expect(throws: KKPushError.self) { try c.validate() })?.message.contains("body_timeout_s") == true)
        }
        var c = configuration
        c.maxConnections = 0
        #expect((#expect(throws: KKPushError.self) { try c.validate() })?.code.rawValue == "mock-max-connections")
    }
}
