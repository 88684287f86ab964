import Foundation
import KKPushCore
internal import COpenSSL

/// HMAC-SHA256 through OpenSSL's one-shot `HMAC()`, and a constant-time comparison (`CRYPTO_memcmp`).
enum HMACSHA256 {
    /// The MAC of `data` under `key` (32 bytes).
    static func mac(key: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard !key.isEmpty else {
            throw KKPushErrorFactory.emptySecret()
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
            throw KKPushError(code: "hmac-failed", message: "OpenSSL's HMAC-SHA256 failed.", underlying: opensslErrors())
        }
        return Array(out.prefix(Int(length)))
    }

    /// True if `a` and `b` are equal, in time that depends only on their length.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }

    private static func opensslErrors() -> String {
        var parts: [String] = []
        for _ in 0..<16 {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return parts.isEmpty ? "no OpenSSL error queued" : parts.joined(separator: "; ")
    }
}

enum KKPushErrorFactory {
    static func emptySecret() -> KKPushError {
        KKPushError(code: "jwt-secret-empty", message: "The device-JWT secret is empty.",
            fix: "Give the backend's signing secret (--secret or KKPUSH_BACKEND_SECRET): 16 bytes or more, 32 recommended.")
    }
}
