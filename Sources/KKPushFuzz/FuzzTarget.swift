import Foundation
import KKPushAuth
import KKPushCore
import KantineKoning

/// One fuzz target: a parser of outside input, fed raw bytes.
///
/// A target must never trap on any input; where a result promises something (a parsed value encodes to
/// text that parses back to it, a normalised token is well formed), the target checks it and traps with
/// ``fuzzFailure(_:)`` when it does not hold, so libFuzzer records the input.
struct FuzzTarget: Sendable {
    /// The name: `KKPUSH_FUZZ_TARGET`, and the folder of its seeds under `Tests/Fuzz/Corpus/`.
    let name: String
    /// The `-max_len` `.ci/fuzz` runs it with.
    let maxLength: Int
    /// What it exercises.
    let summary: String
    /// Runs one input.
    let run: @Sendable ([UInt8]) -> Void
}

enum FuzzTargets {
    /// Every target, in the order `.ci/fuzz --all` runs them.
    static let all: [FuzzTarget] =
        CoreTargets.all + AuthTargets.all + ClientTargets.all + CLITargets.all + MockTargets.all
        + BackendTargets.all + BuildTargets.all

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Traps with `message`: a broken promise of a parser, recorded by libFuzzer as a crash.
func fuzzFailure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("fuzz invariant broken: \(message)", file: file, line: line)
}

/// Traps with `message` unless `condition` holds.
func fuzzCheck(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition { fuzzFailure(message(), file: file, line: line) }
}

/// The input as text, as the readers of text inputs make it (invalid UTF-8 repaired).
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// The input split at the first line feed: (first line, the rest).
func splitFirstLine(_ bytes: [UInt8]) -> (line: [UInt8], rest: [UInt8]) {
    guard let newline = bytes.firstIndex(of: 0x0A) else { return (bytes, []) }
    return (Array(bytes[..<newline]), Array(bytes[(newline + 1)...]))
}

/// Runs async work to its end from the synchronous fuzz callback.
func runBlocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let box = BlockingBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await work()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// The result of ``runBlocking(_:)``'s task, read after the semaphore says it is there.
final class BlockingBox<T>: @unchecked Sendable { var value: T? }

/// Fixed material the targets verify against, so every run judges an input the same way.
enum FuzzFixtures {
    /// The clock every target reads: 2027-01-15T08:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let clock = ManualWallClock(now)

    /// `Certificates/AuthKey_KKTEST0001.p8`: the mock's test key (public test material, not a secret).
    static let keyKKTEST0001 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjhVVxAv8P9kdX+k+
        99ojsVVNn864htdnFy8X8cSf5eyhRANCAAQdHx4t2jA6TltPwos397hmzmR8iYqd
        1YXsIkLVc4doUWCPvt72UnGoqa9Aax5uowVB9Vnzb+PJNiLhPO+hS/ke
        -----END PRIVATE KEY-----

        """
    /// `Certificates/AuthKey_KKTEST0002.p8`.
    static let keyKKTEST0002 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/k2VKDVcqQoeUlam
        iNoG1YYQpMUR+8fezv6gFvZgZxihRANCAASZOGgge5IynV19QqN8bTZW+k0mxsxc
        Tk2bQfq9/OTAMonkWOSPyC1Lz1Y2EueCvZdcD53Oxg0yyAtXHecKIMZ4
        -----END PRIVATE KEY-----

        """
    static let keyID = "KKTEST0001"
    static let teamID = "KKTEAM0001"
    static let privateKey: ES256PrivateKey = {
        do { return try ES256PrivateKey(pem: keyKKTEST0001) } catch {
            fatalError("the fixed test key does not load: \(error)")
        }
    }()
    static let publicKey: ES256PublicKey = privateKey.publicKey

    /// The device-JWT secret of the backend tests.
    static let deviceSecret = "kkpush-test-secret-0123456789abcdef"
    static let bundleID = "nl.kantinekoning.app"
    static let phoneA = "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"
    static let phoneB = "1F2E3D4C-5B6A-4789-8A9B-0C1D2E3F4A5B"
    /// A well-formed 32-byte device token.
    static let deviceToken = String(repeating: "ab", count: 32)
    static let otherToken = String(repeating: "0123456789abcdef", count: 4)

    /// The enrollments the backend targets start from: an active manager (with a token), an active
    /// member without one, and a revoked member.
    static func enrollments() -> [Enrollment] {
        [
            Enrollment(
                deviceID: "dev-manager", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3", "JO11-5"], role: .manager,
                hardwareIdentifier: phoneA, apnsToken: deviceToken, buildEnvironment: "production", appVersion: "1.4.2",
                teamManagerEmail: "jan@example.nl", updatedAt: now),
            Enrollment(
                deviceID: "dev-member", tenantSlug: "agovv", teamCodes: ["JO10-5"], role: .member,
                hardwareIdentifier: phoneB, isTestUser: true, updatedAt: now),
            Enrollment(
                deviceID: "dev-revoked", tenantSlug: "vvwilhelmus", teamCodes: ["JO13-1"], role: .member,
                hardwareIdentifier: phoneB, apnsToken: otherToken, buildEnvironment: "development",
                status: .revoked, updatedAt: now),
        ]
    }
}
