internal import COpenSSL
import KKPushCore

/// Reads OpenSSL's per-thread error queue into text for ``KKPushError/underlying``.
enum OpenSSLErrorQueue {
    /// Empties the queue, so a later ``drain()`` reports only the errors of the next call.
    static func clear() { ERR_clear_error() }

    /// Takes every queued error (oldest first) and joins their texts with `; `; nil if none.
    static func drain() -> String? {
        var texts: [String] = []
        // Bounded: the queue holds at most ERR_NUM_ERRORS (16) entries.
        for _ in 0..<32 {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
            texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return texts.isEmpty ? nil : texts.joined(separator: "; ")
    }

    /// A ``KKPushError`` carrying the queued OpenSSL errors as its underlying cause.
    static func error(code: KKPushError.Code, message: String, fix: String? = nil) -> KKPushError {
        KKPushError(code: code, message: message, fix: fix, underlying: drain().map(KKPushError.Cause.init))
    }
}

/// Owns a memory BIO and frees it on deinit.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// An empty, writable memory BIO.
    init() throws {
        guard let method = BIO_s_mem(), let bio = BIO_new(method) else {
            throw OpenSSLErrorQueue.error(code: .opensslAlloc, message: "OpenSSL could not allocate a memory BIO.")
        }
        pointer = bio
    }

    deinit { BIO_free(pointer) }

    /// Everything written so far, as text.
    func string() -> String {
        var data: UnsafeMutablePointer<CChar>?
        let length = kk_bio_get_mem_data(pointer, &data)
        guard length > 0, let data else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// Calls `body` with a pointer to `bytes` and their count, as the `d2i_*` functions want them.
func withDERPointer<R>(_ bytes: [UInt8], _ body: (inout UnsafePointer<UInt8>?, Int) -> R) -> R {
    bytes.withUnsafeBufferPointer { buffer in
        var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
        return body(&pointer, buffer.count)
    }
}

/// Reads the DER that an `i2d_*` function writes: `encode(nil)` for the length, then into a buffer.
func derBytes(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
    let length = encode(nil)
    guard length > 0 else { return nil }
    var out = [UInt8](repeating: 0, count: Int(length))
    let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&pointer)
    }
    guard written == length else { return nil }
    return out
}
