package import Foundation
package import KKPushAuth
package import KKPushCore
import KKPushSystem

/// The provider-token signing benchmark (`jwt bench`): whole ES256 provider tokens signed on one thread for a while,
/// the rate per second of that thread's CPU time (the basis `openssl speed` reports on, so a busy machine does not
/// skew the comparison) and per wall-clock second, and, on request, `openssl speed ecdsap256`'s rate beside it.
package struct SigningBenchReport: Encodable, Sendable {
    /// Tokens signed.
    package var signs: Int
    /// Wall-clock seconds.
    package var seconds: Double
    /// CPU seconds (user + system) of the signing thread.
    package var cpuSeconds: Double
    /// `openssl speed ecdsap256`'s sign/s (per CPU second), when compared.
    package var opensslSignPerSecond: Double?

    /// Tokens per CPU second.
    package var signPerSecond: Double { Double(signs) / cpuSeconds }
    /// Tokens per wall-clock second.
    package var signPerWallSecond: Double { Double(signs) / seconds }
    /// ``signPerSecond`` over OpenSSL's, when compared.
    package var ratioToOpenSSL: Double? { opensslSignPerSecond.map { signPerSecond / $0 } }

    /// The durations a run accepts, in seconds.
    package static let secondsRange: ClosedRange<Double> = 0.1...600

    /// Signs with `key` for `seconds` on the calling thread, then (with `compareOpenSSL`) runs `openssl speed` for as
    /// long (at least a second). Throws ``KKPushError/Code/opensslSpeedFailed`` when the comparison cannot run.
    package static func run(key: ES256PrivateKey, seconds: Double, compareOpenSSL: Bool) throws -> SigningBenchReport {
        var report = try measure(key: key, seconds: seconds)
        if compareOpenSSL {
            report.opensslSignPerSecond = try opensslSignRate(seconds: max(1, Int(seconds.rounded())))
        }
        return report
    }

    /// Signs whole provider tokens (JSON, base64url, SHA-256, ECDSA, DER→raw) until `seconds` have passed, on the
    /// calling thread (no suspension point, so the work stays on one thread).
    package static func measure(key: ES256PrivateKey, seconds: Double) throws -> SigningBenchReport {
        let clock = ContinuousClock()
        let start = clock.now
        let cpuStart = ThreadCPUTime.seconds()
        let limit = Duration.milliseconds(Int64(seconds * 1000))
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        var count = 0
        // Bounded by time and by a hard cap on the count.
        while count < 100_000_000 {
            for _ in 0..<256 {
                _ = try ProviderToken.sign(
                    keyID: "KKBENCH001", teamID: "KKTEAM0001", issuedAt: base.addingTimeInterval(Double(count)),
                    key: key)
                count += 1
            }
            if clock.now - start >= limit { break }
        }
        let elapsed = clock.now - start
        let cpu = max(ThreadCPUTime.seconds() - cpuStart, 1e-6)
        return SigningBenchReport(signs: count, seconds: elapsed.seconds, cpuSeconds: cpu)
    }

    /// Runs `openssl speed -seconds S ecdsap256` and reads its sign/s figure.
    ///
    /// Spawned through `SpawnedCommand` (posix_spawn, an empty signal mask): `openssl speed` times itself with
    /// SIGALRM, and threads of this process (Dispatch, the cooperative pool) block that signal, a mask a child
    /// started by Foundation's `Process` would inherit (it would then never stop).
    package static func opensslSignRate(seconds: Int) throws -> Double {
        let arguments = ["openssl", "speed", "-seconds", String(seconds), "ecdsap256"]
        let data: [UInt8]
        let status: Int32
        switch SpawnedCommand.run(arguments) {
        case .noPipe(let code):
            throw KKPushError(
                code: .opensslSpeedFailed, message: "Cannot create a pipe for openssl (errno \(code)).",
                fix: "Run it again without the comparison with openssl (compareOpenSSL).")
        case .notStarted(let spawned):
            throw KKPushError(
                code: .opensslSpeedFailed,
                message: "The openssl command to compare with (compareOpenSSL) cannot run (posix_spawnp: \(spawned)).",
                fix:
                    "Install the openssl command line (apt-get install openssl), or leave out the comparison with openssl (compareOpenSSL)."
            )
        case .finished(let s, let output):
            status = s
            data = output
        }
        // " 256 bits ecdsa (nistp256)   0.0000s   0.0000s  69289.9  23614.0"
        let text = String(decoding: data, as: UTF8.self)
        let exited = status & 0x7F == 0 && (status >> 8) & 0xFF == 0
        guard exited,
            let line = text.split(separator: "\n").last(where: { $0.contains("ecdsa (nistp256)") }),
            case let fields = line.split(separator: " "), fields.count >= 2,
            let rate = Double(fields[fields.count - 2])
        else {
            throw KKPushError(
                code: .opensslSpeedFailed,
                message:
                    "The sign/s figure of `openssl speed` to compare with (compareOpenSSL) could not be read (status \(status)).",
                fix:
                    "Check that `openssl speed -seconds 1 ecdsap256` runs here, or leave out the comparison with openssl (compareOpenSSL)."
            )
        }
        return rate
    }

    private enum CodingKeys: String, CodingKey {
        case signs, seconds
        case cpuSeconds = "cpu_seconds"
        case signPerSecond = "sign_per_second"
        case signPerWallSecond = "sign_per_wall_second"
        case opensslSignPerSecond = "openssl_sign_per_second"
        case ratioToOpenSSL = "ratio_to_openssl"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(signs, forKey: .signs)
        try c.encode(seconds, forKey: .seconds)
        try c.encode(cpuSeconds, forKey: .cpuSeconds)
        try c.encode(signPerSecond.rounded(), forKey: .signPerSecond)
        try c.encode(signPerWallSecond.rounded(), forKey: .signPerWallSecond)
        try c.encode(opensslSignPerSecond?.rounded(), forKey: .opensslSignPerSecond)
        try c.encode(ratioToOpenSSL, forKey: .ratioToOpenSSL)
    }
}
