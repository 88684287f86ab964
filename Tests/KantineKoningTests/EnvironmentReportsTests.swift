import Foundation
import KKPushCore
import Testing

@testable import KantineKoning

/// The reports of `env resolve`, `env schemes` and `demo`, as KantineKoning makes them: their fields and their JSON
/// field names (the schema scripts read), null where a value is unknown, absent where an input was not given.
@Suite("Environment reports")
struct EnvironmentReportsTests {
    static func json(_ value: some Encodable) throws -> Any {
        try JSONSerialization.jsonObject(with: JSONEncoder().encode(value), options: .fragmentsAllowed)
    }

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try json(value) as? [String: Any])
    }

    @Test("env resolve: a Release build on TestFlight under APNS_ENV=sandbox is misrouted, and says why")
    func resolution() throws {
        let report = EnvironmentResolutionReport.resolve(
            buildEnvironment: nil, apsEnvironment: nil, scheme: .release, distribution: .testFlight,
            loggingVariant: .testing, sendsAPSEnvironment: false, isTestUser: false,
            settings: ServerAPNsSettings(legacyAPNSEnv: "sandbox"), port: 2197)
        #expect(report.resolution.environment == .sandbox && report.resolution.decidedBy == .legacyAPNSEnv)
        #expect(report.tokenEnvironment == .production && report.misrouted == true)
        #expect(report.endpoint.host == "api.sandbox.push.apple.com" && report.endpoint.port == 2197)
        #expect(!report.warnings.isEmpty)

        let o = try Self.object(report)
        #expect(
            Set(o.keys) == [
                "build_environment", "aps_environment", "apns_environment", "host", "port", "decided_by",
                "device_environment", "token_environment", "misrouted", "is_test_user", "server", "rules", "warnings",
                "scheme", "build_configuration", "distribution", "profile_kind",
            ])
        #expect(o["build_environment"] as? String == "production" && o["aps_environment"] is NSNull)
        #expect(o["apns_environment"] as? String == "sandbox" && o["port"] as? Int == 2197)
        #expect(o["decided_by"] as? String == ResolutionRule.legacyAPNSEnv.rawValue)
        #expect(o["token_environment"] as? String == "production" && o["misrouted"] as? Bool == true)
        #expect(o["scheme"] as? String == "release" && o["build_configuration"] as? String == "Release")
        #expect(o["distribution"] as? String == "testflight" && o["profile_kind"] is String)
        let server = try #require(o["server"] as? [String: Any])
        #expect(server["APNS_ENV"] as? String == "sandbox" && server["APNS_FORCE_ENV"] is NSNull)
        let rule = try #require((o["rules"] as? [[String: Any]])?.first)
        #expect(Set(rule.keys) == ["rule", "decided", "environment", "detail"])
        let warning = try #require((o["warnings"] as? [[String: Any]])?.first)
        #expect(Set(warning.keys) == ["severity", "code", "message", "fix"])
    }

    @Test("env resolve: without a scheme or distribution, their fields are absent and the unknowns null")
    func resolutionWithoutBuild() throws {
        let report = EnvironmentResolutionReport.resolve(
            buildEnvironment: "development", apsEnvironment: nil, scheme: nil, distribution: nil,
            loggingVariant: .testing, sendsAPSEnvironment: false, isTestUser: true, settings: ServerAPNsSettings(),
            port: 443)
        #expect(report.resolution.environment == .sandbox && report.misrouted == nil && report.warnings.isEmpty)
        let o = try Self.object(report)
        for absent in ["scheme", "build_configuration", "distribution", "profile_kind"] { #expect(o[absent] == nil) }
        #expect(o["token_environment"] is NSNull && o["misrouted"] is NSNull && o["is_test_user"] as? Bool == true)
    }

    @Test("env resolve: a distribution alone that the server misroutes is the first problem (distribution-mismatch)")
    func distributionMismatch() {
        let report = EnvironmentResolutionReport.resolve(
            buildEnvironment: "production", apsEnvironment: nil, scheme: nil, distribution: .xcode,
            loggingVariant: .testing, sendsAPSEnvironment: false, isTestUser: false, settings: ServerAPNsSettings(),
            port: 443)
        #expect(report.misrouted == true)
        #expect(
            report.warnings.first?.code.rawValue == "distribution-mismatch" && report.warnings.first?.severity == .error
        )
    }

    @Test("env schemes: one JSON object per scheme × distribution, the misrouted cells marked")
    func schemes() throws {
        let report = EnvironmentSchemesReport.table()
        #expect(report.cells.count == AppBuild.table.count)
        #expect(!report.mismatches.isEmpty && report.mismatches.count < report.cells.count)
        #expect(report.cells.allSatisfy { $0.fixed == $0.build.tokenEnvironment })
        let cells = try #require(try Self.json(report) as? [[String: Any]])
        #expect(cells.count == report.cells.count)
        #expect(
            Set(cells[0].keys) == [
                "scheme", "logging_variant", "build_configuration", "distribution", "profile_kind", "aps_environment",
                "token_environment", "build_environment", "apns_environment", "mismatch",
                "fixed_app_apns_environment", "problems",
            ])
        #expect(cells[0]["logging_variant"] is NSNull)
        #expect(cells.contains { $0["logging_variant"] as? String == "development" })
        #expect(cells.filter { $0["mismatch"] as? Bool == true }.count == report.mismatches.count)
    }

    @Test("demo: every build under every setup (and this process's override), each breaking row with its fix")
    func demo() throws {
        let plain = EnvironmentDemoReport.run()
        #expect(plain.groups.count == EnvironmentDemoReport.setups.count)
        #expect(plain.rows.count == EnvironmentDemoReport.setups.count * EnvironmentDemoReport.builds.count)
        #expect(plain.rows.allSatisfy { $0.delivers == ($0.fix == nil) })
        #expect(plain.broken > 0 && plain.broken < plain.rows.count)

        let overridden = EnvironmentDemoReport.run(processSettings: ServerAPNsSettings(forceEnv: "production"))
        #expect(overridden.groups.last?.setup.name == "this process's environment: APNS_FORCE_ENV=production")
        #expect(overridden.rows.count == plain.rows.count + EnvironmentDemoReport.builds.count)

        let o = try Self.object(plain)
        #expect(Set(o.keys) == ["rows", "broken", "total"])
        #expect(o["broken"] as? Int == plain.broken && o["total"] as? Int == plain.rows.count)
        let rows = try #require(o["rows"] as? [[String: Any]])
        #expect(
            Set(rows[0].keys) == [
                "server", "scheme", "distribution", "build_environment", "token_environment", "apns_environment",
                "host", "decided_by", "delivers", "expected_apns_answer", "problems", "fix",
            ])
        let broken = try #require(rows.first { $0["delivers"] as? Bool == false })
        #expect(broken["expected_apns_answer"] as? String == "400 BadDeviceToken" && broken["fix"] is String)
        let fine = try #require(rows.first { $0["delivers"] as? Bool == true })
        #expect(fine["expected_apns_answer"] as? String == "200" && fine["fix"] is NSNull)
    }
}
