import COpenSSL

/// A TLS failure: what was being done, and what OpenSSL's error queue said about it (oldest first),
/// for example `error:0A000086:SSL routines::certificate verify failed`.
package struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What failed: "handshake", "reading the private key …".
    package var operation: String
    /// OpenSSL's error strings, oldest first; empty when the queue said nothing (a peer that closed).
    package var reasons: [String]

    package init(operation: String, reasons: [String] = []) {
        self.operation = operation
        self.reasons = reasons
    }

    package var description: String {
        reasons.isEmpty ? "TLS \(operation) failed" : "TLS \(operation) failed: \(reasons.joined(separator: "; "))"
    }

    /// Empties this thread's OpenSSL error queue, so that the next call's `SSL_get_error` and any error read
    /// afterwards are that call's own (the queue is per thread, and an event loop thread serves many
    /// connections).
    static func clearQueue() { ERR_clear_error() }

    /// The error queue's entries as a ``TLSError`` of `operation`, emptying the queue.
    static func fromQueue(_ operation: String) -> TLSError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TLSError(operation: operation, reasons: reasons)
    }
}
