import KKPushCore
import Testing

/// The one redaction rule (issue #17): a short prefix of a secret, never a short secret whole.
struct SecretRedactionTests {
    @Test("a long secret shows its first 12 characters; one of 12 characters or fewer is fully masked")
    func prefix() {
        let token = String(repeating: "ab", count: 32)
        #expect(Redaction.prefix(token) == String(token.prefix(12)) + "…")
        #expect(DeviceToken.redacted(token) == String(token.prefix(12)) + "…")
        #expect(Redaction.prefix("0123456789ab") == String(repeating: "•", count: 12))
        #expect(Redaction.prefix("short") == "•••••")
        #expect(Redaction.prefix("") == "")
        #expect(Redaction.prefix("0123456789abcdef", keep: 8) == "01234567…")
        #expect(Redaction.prefix("0123456789a", keep: 8) == "•••••••••••")
    }

    @Test("hint: a 4-character prefix and the length; a short secret masked, its length still given")
    func hint() {
        #expect(Redaction.hint("s3cret-admin-token") == "s3cr… (18 characters)")
        #expect(Redaction.hint("hunter2") == "••••••• (7 characters)")
    }
}
