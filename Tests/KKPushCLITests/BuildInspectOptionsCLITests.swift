import Foundation
import Testing

/// `build inspect`'s help, `--at` and `--json` verdict: the help shows no stray backslashes, `--at` takes an
/// ISO 8601 date or date-time (and only that), a time before the profile was created gets a note, and the JSON
/// verdict is diagnose's object.
@Suite("build inspect: help, --at and the JSON verdict")
struct BuildInspectOptionsCLITests {
    static let profile = CLI.root.appendingPathComponent(
        "Tests/Fuzz/Corpus/build-profile/development.mobileprovision"
    ).path

    @Test("The help has no literal backslashes (line continuations)")
    func help() async throws {
        let r = try await CLI.run(["build", "inspect", "--help"])
        #expect(r.status == 0)
        #expect(!r.stdout.contains("\\"), "\(r.stdout)")
        #expect(r.stdout.contains("- (standard input)"))
    }

    @Test("--at takes a date and a date-time with an offset; not a date with trailing text")
    func at() async throws {
        for at in ["2027-06-10", "2027-06-10T12:00:00Z", "2027-06-10T14:00:00+02:00", "2027-06-10T12:00:00.5Z"] {
            let r = try await CLI.run(["build", "inspect", Self.profile, "--at", at, "--json"])
            #expect(r.status == 0, "--at \(at): \(r.stderr)")
        }
        let bad = try await CLI.run(["build", "inspect", Self.profile, "--at", "2027-06-10x"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("not an ISO 8601 date or date-time"), "\(bad.stderr)")
    }

    @Test("A time before the profile's creation is noted")
    func beforeCreation() async throws {
        let r = try await CLI.run(["build", "inspect", Self.profile, "--at", "2024-06-10", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let problems = try #require(try r.json()["problems"] as? [[String: Any]])
        let note = try #require(problems.first { $0["code"] as? String == "build-time-before-creation" })
        #expect(note["severity"] as? String == "info")
        #expect((note["message"] as? String)?.contains("2026-01-15T09:30:00Z") == true)
        let later = try await CLI.run(["build", "inspect", Self.profile, "--at", "2027-06-10", "--json"])
        let laterCodes = (try later.json()["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(!laterCodes.contains("build-time-before-creation"))
    }

    @Test("--json's verdict is diagnose's object {code, message, fix, why}; verdict_text keeps the line")
    func verdict() async throws {
        let r = try await CLI.run(["build", "inspect", Self.profile, "--at", "2027-06-10", "--json"])
        let j = try r.json()
        let verdict = try #require(j["verdict"] as? [String: Any], "\(r.stdout)")
        #expect(Set(verdict.keys) == ["code", "message", "fix", "why"])
        #expect(verdict["code"] as? String == "ok")
        #expect((j["verdict_text"] as? String)?.hasPrefix("ok as far as the build tells") == true)
        let tampered = CLI.root.appendingPathComponent("Tests/Fuzz/Corpus/build-profile/tampered.mobileprovision")
        let bad = try await CLI.run(["build", "inspect", tampered.path, "--json"])
        let badVerdict = try #require(try bad.json()["verdict"] as? [String: Any], "\(bad.stdout)")
        #expect(bad.status == 1)
        #expect((badVerdict["code"] as? String)?.hasPrefix("build-") == true, "\(badVerdict)")
        #expect((badVerdict["fix"] as? String)?.isEmpty == false)
    }
}
