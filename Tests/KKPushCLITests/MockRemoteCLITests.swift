import Foundation
import KKPushTestSupport
import Testing

/// Issue #19: a mock reachable from where the sender runs. A sender in another network namespace pushes to
/// `kkpush mock serve` by host name, with certificate verification on, through a certificate issued by
/// `kkpush mock certs` (the real binary, a real veth pair; only this machine's own namespaces are targets).
@Suite("kkpush mock certs, and the mock reached from another network namespace (the real binary)", .serialized)
struct MockRemoteCLITests {
    static let topic = "nl.kantinekoning.app"
    static let adminToken = "kkpush-remote-admin-0123456789"
    static var ca: String { CLI.certificates.appendingPathComponent("ca.crt").path }
    static var providerKey: [String] {
        [
            "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
            "KKTEST0001", "--team-id", "KKTEAM0001", "--topic", topic,
        ]
    }

    @Test("mock certs issues a certificate that openssl verifies for each name and address, and for no other")
    func issuesVerifiableCertificate() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-certs")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("certs").path
        let issued = try await CLI.run([
            "mock", "certs", "--host", "Mock.KKPush.test", "--ip", "10.231.7.1", "--ip", "fd00::7", "--out", out,
            "--json",
        ])
        #expect(issued.status == 0, "\(issued.stderr)")
        let object = try issued.json()
        #expect(object["host_names"] as? [String] == ["mock.kkpush.test", "localhost"])
        #expect(object["addresses"] as? [String] == ["10.231.7.1", "fd00::7", "127.0.0.1", "::1"])
        let key = try FileManager.default.attributesOfItem(atPath: out + "/server.key")
        #expect((key[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        func verify(_ check: [String]) async throws -> Bool {
            let result = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/openssl"),
                ["verify", "-CAfile", Self.ca] + check + [out + "/server.crt"], timeout: 20)
            return result.status == 0
        }
        #expect(try await verify(["-verify_hostname", "mock.kkpush.test"]))
        #expect(try await verify(["-verify_hostname", "localhost"]))
        #expect(try await verify(["-verify_ip", "10.231.7.1"]))
        #expect(try await verify(["-verify_ip", "fd00::7"]))
        #expect(try await !verify(["-verify_hostname", "other.kkpush.test"]))
        #expect(try await !verify(["-verify_ip", "10.231.7.2"]))

        let again = try await CLI.run(["mock", "certs", "--host", "mock.kkpush.test", "--out", out])
        #expect(again.status == 2)
        #expect(again.stderr.contains("exists; nothing was written"), "\(again.stderr)")
        let forced = try await CLI.run(["mock", "certs", "--host", "mock.kkpush.test", "--out", out, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
    }

    @Test("mock certs refuses bad names, addresses and days with exit 64, naming the value")
    func refusesBadInput() async throws {
        for (arguments, words) in [
            (["--host", "bad_name.test"], "--host 'bad_name.test' has a character"),
            (["--host", "10.0.0.1"], "is an IP address: give it with --ip"),
            (["--ip", "10.0.0.300"], "--ip '10.0.0.300' is not an IPv4 or IPv6 address"),
            (["--host", "ok.test", "--days", "0"], "--days 0 is out of range"),
            ([String](), "Give at least one --host NAME or --ip ADDRESS"),
        ] {
            let result = try await CLI.run(["mock", "certs", "--out", "/nonexistent/never"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
    }

    @Test("mock serve beyond loopback needs an admin token, for the APNs listeners as for the admin API")
    func tokenRequiredBeyondLoopback() async throws {
        for arguments in [["--host", "0.0.0.0"], ["--admin-host", "0.0.0.0"]] {
            let result = try await CLI.run(
                ["mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0"] + arguments,
                environment: ["KKPUSH_ADMIN_TOKEN": ""], timeout: 20)
            #expect(result.status != 0, "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains("without an admin token"), "\(arguments): \(result.stderr)")
        }
    }

    @Test(
        "a sender in another network namespace pushes to the mock by host name, verifying its certificate")
    func senderInAnotherNamespace() async throws {
        let namespace = try await offThread { try NetworkNamespace(hosts: ["mock.kkpush.test", "wrong.kkpush.test"]) }
        defer { Thread.detachNewThread { namespace.remove() } }
        let dir = try makeTemporaryDirectory(prefix: "kkpush-remote")
        defer { try? FileManager.default.removeItem(at: dir) }
        let certs = dir.appendingPathComponent("certs").path
        let issued = try await CLI.run([
            "mock", "certs", "--host", "mock.kkpush.test", "--ip", namespace.hostAddress, "--out", certs,
        ])
        #expect(issued.status == 0, "\(issued.stderr)")

        let (mock, announced) = try await CLI.start([
            "mock", "serve", "--host", namespace.hostAddress, "--sandbox-port", "0", "--production-port", "0",
            "--admin-port", "0", "--cert", certs + "/server.crt", "--key", certs + "/server.key", "--admin-token",
            Self.adminToken, "--json",
        ])
        defer { mock.send(SIGKILL) }
        let info = try #require(try JSONSerialization.jsonObject(with: Data(announced.utf8)) as? [String: Any])
        let port = try #require(info["sandbox_port"] as? Int)
        let adminURL = try #require(info["admin_url"] as? String)

        let token = String(repeating: "ab", count: 32)
        let (ip, sendArguments) = namespace.exec([
            try CLI.binary.path, "send", "--token", token, "--title", "Dienst gewijzigd", "--url",
            "https://mock.kkpush.test:\(port)", "--ca-file", Self.ca, "--json",
        ])
        let sent = try await runProcess(ip, sendArguments + Self.providerKey, timeout: 60)
        let sentText = String(decoding: sent.stdout, as: UTF8.self)
        #expect(sent.status == 0, "\(sentText) \(String(decoding: sent.stderr, as: UTF8.self))")
        let answer = try JSONSerialization.jsonObject(with: sent.stdout) as? [String: Any]
        #expect(answer?["http_status"] as? Int == 200, "\(sentText)")
        let apnsID = try #require(answer?["apns_id"] as? String)

        // The same mock under a name its certificate does not hold: verification is on, so it fails.
        let (_, wrongArguments) = namespace.exec([
            try CLI.binary.path, "send", "--token", token, "--title", "x", "--url", "https://wrong.kkpush.test:\(port)",
            "--ca-file", Self.ca,
        ])
        let wrong = try await runProcess(ip, wrongArguments + Self.providerKey, timeout: 60)
        // The verdict is on stdout ("failed (tls) …: … certificate …"); stderr holds warnings only.
        let wrongText = String(decoding: wrong.stdout + wrong.stderr, as: UTF8.self)
        #expect(wrong.status == 1, "\(wrongText)")
        #expect(wrongText.lowercased().contains("failed (tls)"), "\(wrongText)")
        #expect(wrongText.lowercased().contains("certificate"), "\(wrongText)")

        // curl, an independent client, from the namespace: TLS verified by name, APNs answers 403.
        let (_, curlArguments) = namespace.exec([
            "/usr/bin/curl", "-sS", "--http2", "--cacert", Self.ca, "-o", "/dev/null", "-w", "%{http_code}", "-X",
            "POST", "-d", "{}", "https://mock.kkpush.test:\(port)/3/device/\(token)",
        ])
        let curl = try await runProcess(ip, curlArguments, timeout: 30)
        #expect(
            String(decoding: curl.stdout, as: UTF8.self) == "403", "\(String(decoding: curl.stderr, as: UTF8.self))")

        // The delivery log (admin API, with the token) holds the push by its apns-id; without the token: 401.
        let log = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"),
            [
                "-sS", "-H", "Authorization: Bearer \(Self.adminToken)",
                "\(adminURL)/log?apns_id=\(apnsID.lowercased())",
            ], timeout: 20)
        let logged = try JSONSerialization.jsonObject(with: log.stdout) as? [String: Any]
        let notifications = logged?["notifications"] as? [[String: Any]] ?? []
        #expect(notifications.count == 1, "\(String(decoding: log.stdout, as: UTF8.self))")
        let unauthorized = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(adminURL)/log"],
            timeout: 20)
        #expect(String(decoding: unauthorized.stdout, as: UTF8.self) == "401")
        await mock.stop()
    }
}
