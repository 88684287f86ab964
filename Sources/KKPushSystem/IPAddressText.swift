#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// IP addresses as text, read by the C library (`inet_pton`), not by hand.
public enum IPAddressText {
    /// The canonical text of an IPv4 or IPv6 address (`fd00::7`, `10.0.0.1`), nil if `text` is neither.
    public static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        var v6 = in6_addr()
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if inet_pton(AF_INET, text, &v4) == 1 {
            return inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
        }
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
        }
        return nil
    }
}
