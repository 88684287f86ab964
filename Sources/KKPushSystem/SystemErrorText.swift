#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C library's words for an `errno` value, for messages ("Connection refused").
public enum SystemErrorText {
    public static func text(errno code: Int32) -> String { String(cString: strerror(code)) }
}
