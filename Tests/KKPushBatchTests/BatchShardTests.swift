import KKPushBatch
import KKPushTestSupport
import Testing

/// `send-batch --shard K/N`'s rule (`BatchShard`): which of N parts owns a line, by its token.
@Suite("Batch shards: the part follows the token")
struct BatchShardTests {
    @Test("A token goes to the same part wherever it sits in the file (the part follows the token, not the line)")
    func partFollowsTheToken() throws {
        let tokens = TestTokens.random(200)
        for n in [2, 3, 7] {
            for token in tokens {
                let owners = try (1...n).filter { try BatchShard(parsing: "\($0)/\(n)").owns(key: token, line: 5) }
                #expect(owners.count == 1)
                let elsewhere = try (1...n).filter {
                    try BatchShard(parsing: "\($0)/\(n)").owns(key: token.uppercased(), line: 9_999)
                }
                #expect(elsewhere == owners, "the same token in another case and line: another part")
            }
        }
        // Stable across processes and releases: FNV-1a's published test vector.
        #expect(BatchResume.fingerprint("a") == 0xaf63_dc4c_8601_ec8c)
    }
}
