import Foundation
import Testing

@Suite("kkpush version and env (the command line)")
struct FoundationCLITests {
    @Test func version() async throws {
        let r = try await CLI.run(["version"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("kkpush "))
        #expect(r.stdout.contains("libcurl "))
        #expect(r.stdout.contains("nghttp2/"))
        #expect(r.stdout.contains("OpenSSL 3"))
    }

    @Test func versionJSON() async throws {
        let r = try await CLI.run(["version", "--json"])
        #expect(r.status == 0)
        let j = try r.json()
        #expect(j["http2"] as? Bool == true)
        #expect((j["libcurl"] as? String)?.isEmpty == false)
        #expect((j["openssl"] as? String)?.hasPrefix("OpenSSL 3") == true)
        #expect(j["nghttp2"] is String)
    }

    struct ResolveCase: Sendable, CustomTestStringConvertible {
        var args: [String]
        var env: String
        var host: String
        var decidedBy: String
        var warning: String?
        var testDescription: String { args.joined(separator: " ") }
    }

    static let resolveCases: [ResolveCase] = [
        .init(
            args: ["--build-environment", "development"], env: "sandbox", host: "api.sandbox.push.apple.com",
            decidedBy: "build_environment"),
        .init(
            args: ["--build-environment", "debug"], env: "sandbox", host: "api.sandbox.push.apple.com",
            decidedBy: "build_environment", warning: "build-environment-nonstandard"),
        .init(
            args: ["--build-environment", "production"], env: "production", host: "api.push.apple.com",
            decidedBy: "default"),
        .init(
            args: ["--build-environment", "testing"], env: "production", host: "api.push.apple.com",
            decidedBy: "default", warning: "build-environment-testing"),
        .init(
            args: ["--build-environment", "weird"], env: "production", host: "api.push.apple.com", decidedBy: "default",
            warning: "build-environment-unknown"),
        .init(
            args: [], env: "production", host: "api.push.apple.com", decidedBy: "default",
            warning: "build-environment-missing"),
        .init(
            args: ["--build-environment", "production", "--test-user"], env: "sandbox",
            host: "api.sandbox.push.apple.com", decidedBy: "is_test_user", warning: "test-user-production-build"),
        .init(
            args: ["--build-environment", "development", "--apns-force-env", "production"], env: "production",
            host: "api.push.apple.com", decidedBy: "APNS_FORCE_ENV", warning: "force-env-override"),
        .init(
            args: ["--build-environment", "production", "--apns-env", "sandbox"], env: "sandbox",
            host: "api.sandbox.push.apple.com", decidedBy: "APNS_ENV", warning: "server-env-override"),
        .init(
            args: ["--build-environment", "Development"], env: "production", host: "api.push.apple.com",
            decidedBy: "default", warning: "build-environment-not-normalized"),
        .init(
            args: ["--scheme", "release-with-logging"], env: "production", host: "api.push.apple.com",
            decidedBy: "default", warning: "build-environment-mismatch"),
        .init(
            args: ["--scheme", "Release Testing"], env: "sandbox", host: "api.sandbox.push.apple.com",
            decidedBy: "build_environment"),
    ]

    @Test("env resolve --json over the rules", arguments: resolveCases)
    func resolveJSON(_ c: ResolveCase) async throws {
        let r = try await CLI.run(["env", "resolve"] + c.args + ["--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try r.json()
        #expect(j["apns_environment"] as? String == c.env)
        #expect(j["host"] as? String == c.host)
        #expect(j["port"] as? Int == 443)
        #expect(j["decided_by"] as? String == c.decidedBy)
        let warnings = try #require(j["warnings"] as? [[String: Any]])
        let codes = warnings.compactMap { $0["code"] as? String }
        if let w = c.warning {
            #expect(codes.contains(w), "codes: \(codes)")
        } else {
            #expect(codes.isEmpty, "codes: \(codes)")
        }
        for w in warnings { #expect(w["message"] is String) }
    }

    @Test("env resolve, human output lists each rule in order")
    func resolveHuman() async throws {
        let r = try await CLI.run(["env", "resolve", "--build-environment", "production", "--apns-env", "sandbox"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("APNs environment: sandbox (api.sandbox.push.apple.com:443)"))
        #expect(r.stdout.contains("1. APNS_FORCE_ENV"))
        #expect(r.stdout.contains("2. APNS_ENV"))
        #expect(r.stdout.contains("fly secrets unset APNS_ENV -a kantine-koning"))
    }

    @Test(
        "env resolve reads the server's variables by default (as on the server); --ignore-process-env stops it; old flag names still work"
    )
    func processEnvironment() async throws {
        let env = ["APNS_ENV": "sandbox"]
        let with = try await CLI.run(
            ["env", "resolve", "--build-environment", "production", "--json"], environment: env)
        #expect(try with.json()["apns_environment"] as? String == "sandbox")
        let without = try await CLI.run(
            ["env", "resolve", "--build-environment", "production", "--ignore-process-env", "--json"], environment: env)
        #expect(try without.json()["apns_environment"] as? String == "production")
        // The spellings before issue #17, hidden from the help, for scripts.
        let old = try await CLI.run(
            [
                "env", "resolve", "--build-environment", "production", "--from-process-env", "--server-apns-env",
                "production",
                "--force-env", "sandbox", "--json",
            ], environment: env)
        #expect(try old.json()["apns_environment"] as? String == "sandbox")
        #expect(try old.json()["decided_by"] as? String == "APNS_FORCE_ENV")
        let twice = try await CLI.run(
            [
                "env", "resolve", "--build-environment", "production", "--apns-env", "sandbox", "--server-apns-env",
                "sandbox",
            ])
        #expect(twice.status == 64)
    }

    @Test("port 2197", arguments: [("2197", 0), ("8443", 64)])
    func port(port: String, status: Int32) async throws {
        let r = try await CLI.run(["env", "resolve", "--build-environment", "production", "--port", port, "--json"])
        #expect(r.status == status)
        if status == 0 {
            #expect(try r.json()["port"] as? Int == 2197)
        } else {
            // Under --json the usage error is the JSON error object on stdout (README "Exit codes").
            let error = try #require(try r.json()["error"] as? [String: Any])
            #expect(error["code"] as? String == "usage")
            #expect((error["message"] as? String)?.contains("--port") == true)
        }
    }
}

@Suite("kkpush demo and env schemes")
struct DemoCLITests {
    @Test func demoJSON() async throws {
        let r = try await CLI.run(["demo", "--json"])
        #expect(r.status == 0)
        let j = try r.json()
        let rows = try #require(j["rows"] as? [[String: Any]])
        #expect(rows.count == 25)
        // Auto-detection breaks only the build that reports "testing"; APNS_ENV=sandbox breaks Release.
        let broken = rows.filter { $0["delivers"] as? Bool == false }
        #expect(broken.count == j["broken"] as? Int)
        #expect(
            broken.contains {
                $0["server"] as? String == "APNS_ENV=sandbox (legacy)" && $0["scheme"] as? String == "release"
                    && $0["distribution"] as? String == "app-store"
            })
        // Apple's signing: a Debug-configuration build on TestFlight breaks under auto-detection, as does a
        // Release-configuration build run from Xcode.
        for (scheme, distribution) in [("release-testing", "testflight"), ("release", "xcode")] {
            #expect(
                broken.contains {
                    $0["server"] as? String == "auto-detection (recommended)" && $0["scheme"] as? String == scheme
                        && $0["distribution"] as? String == distribution
                })
        }
        #expect(
            !rows.contains {
                $0["server"] as? String == "auto-detection (recommended)" && $0["scheme"] as? String == "release"
                    && $0["distribution"] as? String == "app-store" && $0["delivers"] as? Bool == false
            })
    }

    @Test func demoHuman() async throws {
        let r = try await CLI.run(["demo"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("fly secrets unset APNS_ENV -a kantine-koning"))
        #expect(r.stdout.contains("400 BadDeviceToken"))
    }

    @Test func schemes() async throws {
        let r = try await CLI.run(["env", "schemes", "--json"])
        #expect(r.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        // 4 configurations × 5 distributions.
        #expect(rows.count == 20)
        func cell(_ scheme: String, _ distribution: String, _ buildEnvironment: String) throws -> [String: Any] {
            try #require(
                rows.first {
                    $0["scheme"] as? String == scheme && $0["distribution"] as? String == distribution
                        && $0["build_environment"] as? String == buildEnvironment
                })
        }
        let testing = try cell("release-with-logging", "xcode", "testing")
        #expect(testing["apns_environment"] as? String == "production")
        #expect(testing["token_environment"] as? String == "sandbox")
        #expect((testing["problems"] as? [[String: Any]])?.first?["code"] as? String == "build-environment-mismatch")
        // Apple signs TestFlight builds for production whatever their configuration.
        let debugOnTestFlight = try cell("release-testing", "testflight", "development")
        #expect(debugOnTestFlight["aps_environment"] as? String == "production")
        #expect(debugOnTestFlight["apns_environment"] as? String == "sandbox")
        #expect(debugOnTestFlight["mismatch"] as? Bool == true)
        #expect(debugOnTestFlight["fixed_app_apns_environment"] as? String == "production")
        let releaseFromXcode = try cell("release", "xcode", "production")
        #expect(
            releaseFromXcode["mismatch"] as? Bool == true
                && releaseFromXcode["aps_environment"] as? String == "development")
        let releaseOnAppStore = try cell("release", "app-store", "production")
        #expect(releaseOnAppStore["mismatch"] as? Bool == false)
        // Misrouted today: each configuration that reports development on the 4 production distributions (release-testing,
        // release-with-logging (development): 8), and each that resolves to production run from Xcode (release,
        // release-with-logging (testing): 2).
        let mismatches = rows.filter { $0["mismatch"] as? Bool == true }
        #expect(mismatches.count == 10)
        #expect(rows.allSatisfy { $0["fixed_app_apns_environment"] as? String == $0["token_environment"] as? String })
    }
}
