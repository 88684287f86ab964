package import KKPushCore

/// One of N parts of a token file (`K/N`), so N machines can split one file without a database: each line
/// belongs to exactly one part, by its device token (or a broadcast's channel id), so a token is sent by the same
/// part whatever order the file is in and wherever a copy of it sits; a line with neither (an unusable line) belongs
/// to a part by its line number, so exactly one part reports it.
///
/// The hash is FNV-1a (64-bit, ``BatchResume/fingerprint(_:)``) of the token as sent (lowercase hex), stable across processes, machines and releases
/// (Swift's `Hasher` is seeded per process, so it cannot be used). Over random 32-byte tokens the parts come out
/// even to within a fraction of a percent.
package struct BatchShard: Sendable, Equatable, CustomStringConvertible {
    /// The part, 1 to ``count``.
    package let index: Int
    /// How many parts the input is split into, 1 to ``maximumCount``.
    package let count: Int

    /// The most parts an input may be split into.
    package static let maximumCount = 10_000

    /// Parses `K/N`: 1 ≤ K ≤ N ≤ ``maximumCount``.
    package init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw KKPushError(
                code: .batchShardMalformed,
                message:
                    "The shard (shard) is '\(text)', but must be K/N: this machine's part and how many parts, such as 1/4.",
                fix: "Give every machine the same N and each its own K from 1 to N.")
        }
        if let negative = [k, n].first(where: { $0 < 0 }) {
            throw KKPushError(
                code: .batchShardMalformed,
                message:
                    "The shard (shard) '\(text)' is malformed: \(negative) is negative. It must be K/N: this machine's part K from 1 to N, and the number of parts N, such as 1/4.",
                fix: "Give every machine the same N and each its own K from 1 to N.")
        }
        guard (1...Self.maximumCount).contains(n), (1...n).contains(k) else {
            throw KKPushError(
                code: .batchShardMalformed,
                message:
                    "The shard (shard) is \(k)/\(n): the part must be 1 to the number of parts, and the number of parts 1 to \(Self.maximumCount).",
                fix: "Give every machine the same N and each its own K from 1 to N.")
        }
        index = k
        count = n
    }

    package var description: String { "\(index)/\(count)" }

    /// True if the line belongs to this part: by `key` (the device token or channel id) when there is one, else by
    /// the line's number.
    package func owns(key: String, line: Int) -> Bool {
        guard count > 1 else { return true }
        let part: UInt64
        if key.isEmpty {
            part = UInt64(max(line, 1) - 1) % UInt64(count)
        } else {
            part = BatchResume.fingerprint(key.lowercased()) % UInt64(count)
        }
        return part == UInt64(index - 1)
    }
}
