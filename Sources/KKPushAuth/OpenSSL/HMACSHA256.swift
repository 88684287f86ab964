internal import COpenSSL
import KKPushCore

/// HMAC-SHA256 through OpenSSL's one-shot `HMAC()`, and a constant-time comparison (`CRYPTO_memcmp`).
public enum HMACSHA256 {
    /// The MAC of `data` under `key` (32 bytes). Throws `hmac-key-empty` for an empty key (callers
    /// with a secret of their own, such as the device JWT, refuse an empty one with their own error first).
    public static func mac(key: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard !key.isEmpty else {
            throw KKPushError(code: .hmacKeyEmpty, message: "The HMAC-SHA256 key is empty.")
        }
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // Never hand OpenSSL a nil data pointer: an empty message is passed as one byte with length 0.
        let message = data.isEmpty ? [0] : data
        let result = key.withUnsafeBytes { k in
            message.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress, data.count, o.baseAddress, &length)
                }
            }
        }
        guard result != nil, length == 32 else {
            throw KKPushError(
                code: .hmacFailed, message: "OpenSSL's HMAC-SHA256 failed.",
                underlying: KKPushError.Cause(OpenSSLErrorQueue.drain() ?? "no OpenSSL error queued"))
        }
        return Array(out.prefix(Int(length)))
    }

    /// True if `a` and `b` are equal, in time that depends only on their length.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}
