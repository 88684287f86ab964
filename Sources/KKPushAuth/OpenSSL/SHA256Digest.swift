internal import COpenSSL

/// SHA-256 through OpenSSL's one-shot `SHA256()`.
public enum SHA256Digest {
    /// The 32-byte digest of `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let message = data.isEmpty ? [0] : data
        _ = message.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { SHA256(input.baseAddress, data.count, $0.baseAddress) }
        }
        return digest
    }

    /// The digest of `text`'s UTF-8 as lowercase hex.
    public static func hex(_ text: String) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        for byte in hash(Array(text.utf8)) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }
}
