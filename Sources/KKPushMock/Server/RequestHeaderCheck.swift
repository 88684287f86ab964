import NIOHPACK

/// RFC 9113's rules for a request's header block (§8.2, §8.3.1) and its trailers (§8.1), checked by the mock in one
/// pass over the bytes (the frame layer, ``NGHTTP2Framing``, runs libnghttp2 with its HTTP messaging checks off, so
/// these rules, and a client's `content-length`, are the mock's own and the same on every path).
///
/// The same rules as NIOHTTP2's and libnghttp2's, so a client sees the same thing: a malformed block is a stream
/// error, the stream is reset with `PROTOCOL_ERROR` and the connection goes on (§8.1.1). A request block: pseudo-header fields
/// before regular ones, each at most once, only `:method`, `:scheme`, `:path`, `:authority` (a CONNECT request:
/// `:method` and `:authority` only), the first three required on any other request, `:path` not empty, no
/// `:protocol` (the mock does not offer extended CONNECT). Trailers: no pseudo-header fields. Both: names of
/// lowercase token characters (§8.2.1 with RFC 9110 §5.6.2), no connection-specific field (§8.2.2: `connection`,
/// `proxy-connection`, `keep-alive`, `transfer-encoding`, `upgrade`), `te` only as `trailers` (requests), no NUL,
/// CR or LF in a value, and no control character, space or DEL in a pseudo-header's value. A `content-length`
/// must be digits, every one the same (RFC 9110 §8.6), and the body exactly that long (the handler counts it).
enum RequestHeaderCheck {
    /// What is wrong with a request's header block, or nil if it is well-formed.
    static func request(_ headers: HPACKHeaders) -> String? {
        check(headers, trailers: false)
    }

    /// What is wrong with a stream's trailers, or nil if they are well-formed.
    static func trailers(_ headers: HPACKHeaders) -> String? {
        check(headers, trailers: true)
    }

    /// A request's declared body length: `length` nil when it sent no `content-length`.
    struct DeclaredLength {
        var length: Int?
    }

    /// The request's `content-length`, or nil when one is not a length in digits or two disagree (malformed).
    static func contentLength(_ headers: HPACKHeaders) -> DeclaredLength? {
        var length: Int? = nil
        for (name, value, _) in headers where name == "content-length" {
            let digits = value.utf8
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let n = Int(value)
            else { return nil }
            if let length, length != n { return nil }
            length = n
        }
        return DeclaredLength(length: length)
    }

    private struct Pseudo: OptionSet {
        let rawValue: UInt8
        static let method = Pseudo(rawValue: 1 << 0)
        static let scheme = Pseudo(rawValue: 1 << 1)
        static let path = Pseudo(rawValue: 1 << 2)
        static let authority = Pseudo(rawValue: 1 << 3)
    }

    private static func check(_ headers: HPACKHeaders, trailers: Bool) -> String? {
        var seen: Pseudo = []
        var regularSeen = false
        var isConnect = false
        for (shown, value, _) in headers {
            var name = shown
            var value = value
            let problem: String? = name.withUTF8 { n in
                value.withUTF8 { v in
                    guard let first = n.first else { return "an empty header name" }
                    if first == UInt8(ascii: ":") {
                        if trailers { return "a pseudo-header field (\(shown)) in trailers" }
                        if regularSeen { return "the pseudo-header field \(shown) after a regular field" }
                        let kind: Pseudo
                        if equals(n, ":method") {
                            kind = .method
                            isConnect = equals(v, "CONNECT")
                        } else if equals(n, ":scheme") {
                            kind = .scheme
                        } else if equals(n, ":path") {
                            guard !v.isEmpty else { return "an empty :path" }
                            kind = .path
                        } else if equals(n, ":authority") {
                            kind = .authority
                        } else {
                            return "the pseudo-header field \(shown), not one a request may carry"
                        }
                        if seen.contains(kind) { return "the pseudo-header field \(shown) twice" }
                        seen.insert(kind)
                        if v.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
                            return "a control character, space or DEL in \(shown)"
                        }
                        return nil
                    }
                    regularSeen = true
                    guard n.allSatisfy(isLowercaseTokenByte) else { return "the header name '\(shown)'" }
                    if equals(n, "connection") || equals(n, "transfer-encoding") || equals(n, "proxy-connection")
                        || equals(n, "keep-alive") || equals(n, "upgrade")
                    {
                        return "the connection-specific header field \(shown)"
                    }
                    if !trailers, equals(n, "te"), !equals(v, "trailers") { return "te other than trailers" }
                    if v.contains(where: { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D }) {
                        return "NUL, CR or LF in the value of \(shown)"
                    }
                    return nil
                }
            }
            if let problem { return problem }
        }
        if trailers { return nil }
        if isConnect {
            return seen == [.method, .authority] ? nil : "a CONNECT request without exactly :method and :authority"
        }
        return seen.isSuperset(of: [.method, .scheme, .path]) ? nil : "a request without :method, :scheme and :path"
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return text.withUTF8Buffer { bytes.elementsEqual($0) }
    }

    /// RFC 9110 §5.6.2's `tchar` without the upper-case letters (RFC 9113 §8.2.1).
    private static func isLowercaseTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x5E...0x7A, 0x7C, 0x7E: true
        default: false
        }
    }
}
