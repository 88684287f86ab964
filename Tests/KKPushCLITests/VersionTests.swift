import Foundation
import KKPushCLISupport
import KKPushTestSupport
import Testing

/// kkpush's version: `0.MINOR.PATCH` in one place (`KKPushVersion.string`), printed by `kkpush version`, and the git
/// tags of releases naming the same three numbers (Architecture, "Versions").
@Suite("kkpush's version and its release tags")
struct VersionTests {
    /// The three numbers of `text` if it is `0.MINOR.PATCH` (no `v`, no suffix), else nil.
    static func numbers(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 3, parts.allSatisfy({ $0 != nil }), parts[0] == 0 else { return nil }
        return parts.compactMap { $0 }
    }

    /// The release tags (`0.x.y`) git knows that the checked-out commit contains, and those at the commit itself.
    static func tags() async throws -> (reachable: [String], here: [String]) {
        let git = URL(fileURLWithPath: "/usr/bin/git")
        let root = Repository.root
        func lines(_ arguments: [String]) async throws -> [String] {
            let r = try await runProcess(git, ["-C", root.path] + arguments, timeout: 30)
            #expect(r.status == 0, "git \(arguments): \(String(decoding: r.stderr, as: UTF8.self))")
            return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let reachable = try await lines(["tag", "--merged", "HEAD"]).filter { numbers($0) != nil }
        let here = try await lines(["tag", "--points-at", "HEAD"]).filter { numbers($0) != nil }
        return (reachable, here)
    }

    @Test("The version is 0.MINOR.PATCH, and kkpush version and --version print it")
    func form() async throws {
        #expect(Self.numbers(KKPushVersion.string) != nil, "\(KKPushVersion.string) is not 0.MINOR.PATCH")
        let version = try await CLI.run(["version"])
        #expect(version.stdout.contains("kkpush \(KKPushVersion.string)"), "\(version.stdout)")
        let flag = try await CLI.run(["--version"])
        #expect(flag.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == KKPushVersion.string)
    }

    @Test("A release tag at this commit names this version; no tag before it names a later one")
    func tagsAgree() async throws {
        let (reachable, here) = try await Self.tags()
        for tag in here {
            #expect(tag == KKPushVersion.string, "HEAD is tagged \(tag), the code says \(KKPushVersion.string)")
        }
        let current = try #require(Self.numbers(KKPushVersion.string))
        for tag in reachable {
            let earlier = try #require(Self.numbers(tag))
            #expect(
                earlier.lexicographicallyPrecedes(current) || earlier == current,
                "tag \(tag) is after \(KKPushVersion.string)")
        }
    }
}
